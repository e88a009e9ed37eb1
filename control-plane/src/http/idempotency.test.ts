import { randomUUID } from 'node:crypto';
import { ApiKeyCreated, EnrollmentTokenCreated, SessionCreated, TotpEnrollment } from '@ark/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, createTestApp, type SeededAccount, seedAccount, type TestApp } from '../testing/app.js';
import { DIALECTS } from '../testing/stores.js';
import { answersMayCarrySecrets } from './idempotency.js';

// Stored answers are sealed at rest when they may carry a secret shown once, and stored as sent otherwise (sealing
// costs a cipher per request). Which is decided from the route's success schemas.

const object = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ type: 'object', properties, ...extra });

describe('which answers may carry a secret', () => {
  it('the answers of the contract that show a secret once', () => {
    for (const schema of [ApiKeyCreated, SessionCreated, TotpEnrollment, EnrollmentTokenCreated]) {
      expect(answersMayCarrySecrets({ schema: { response: { 201: schema } } })).toBe(true);
    }
  });

  it('a secret anywhere in the answer, in an array, a union or a second success status', () => {
    const nested = object({ items: { type: 'array', items: object({ poll_secret: { type: 'string' } }) } });
    expect(answersMayCarrySecrets({ schema: { response: { 200: nested } } })).toBe(true);
    const union = { anyOf: [object({ id: { type: 'string' } }), object({ refresh_token: { type: 'string' } })] };
    expect(answersMayCarrySecrets({ schema: { response: { 201: union } } })).toBe(true);
    const second = { 200: object({ id: { type: 'string' } }), 202: object({ private_key: { type: 'string' } }) };
    expect(answersMayCarrySecrets({ schema: { response: second } })).toBe(true);
  });

  it('what the schema does not show counts as a secret: no schema, a reference, free-form properties', () => {
    expect(answersMayCarrySecrets({})).toBe(true);
    expect(answersMayCarrySecrets({ schema: { response: { 422: object({ error: { type: 'object' } }) } } })).toBe(true);
    expect(answersMayCarrySecrets({ schema: { response: { 201: { $ref: 'Answer#' } } } })).toBe(true);
    const map = object({ labels: { type: 'object', additionalProperties: { type: 'string' } } });
    expect(answersMayCarrySecrets({ schema: { response: { 201: map } } })).toBe(true);
  });

  it('an answer of plain fields, refusals aside, carries none', () => {
    const view = object({ job_id: { type: 'string' }, state: { type: 'string' }, budget_micro: { type: 'string' } });
    const error = object({ error: object({ code: { type: 'string' }, message: { type: 'string' } }) });
    expect(answersMayCarrySecrets({ schema: { response: { 202: view, 409: error, 422: error } } })).toBe(false);
  });
});

describe.each(DIALECTS)('stored answers at rest on %s', (dialect) => {
  let t: TestApp<never>;
  let caller: SeededAccount;
  let served = 0;
  const answer = object({ served: { type: 'integer' } }, { required: ['served'], additionalProperties: false });
  beforeAll(async () => {
    t = await createTestApp(dialect, {
      extraRoutes: (app) => {
        app.post(
          '/test/idempotency/view',
          { config: { auth: {}, idempotent: true }, schema: { response: { 201: answer } } },
          async (_request, reply) => reply.code(201).send({ served: ++served }),
        );
        app.post(
          '/test/idempotency/secret',
          { config: { auth: {}, idempotent: true }, schema: { response: { 201: object({ token: { type: 'string' } }) } } },
          async (_request, reply) => reply.code(201).send({ token: `tok-${++served}` }),
        );
      },
    });
    caller = await seedAccount(t.ctx);
  });
  afterAll(async () => {
    await t.destroy();
  });

  const post = (url: string, key: string) =>
    t.app.inject({ method: 'POST', url, headers: { ...bearer(caller.apiKey), 'idempotency-key': key }, payload: {} });
  const storedBody = async (key: string) =>
    (await t.store.db.selectFrom('idempotency_keys').select('response_body').where('key', '=', key).executeTakeFirstOrThrow())
      .response_body;

  it('keeps an answer without a secret as it was sent, and replays it exactly', async () => {
    const key = randomUUID();
    const first = await post('/test/idempotency/view', key);
    expect(first.statusCode).toBe(201);
    expect(await storedBody(key)).toBe(`plain:${first.body}`);
    const replay = await post('/test/idempotency/view', key);
    expect(replay.statusCode).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.body).toBe(first.body);
  });

  it('seals an answer that may carry a secret, and replays it opened', async () => {
    const key = randomUUID();
    const first = await post('/test/idempotency/secret', key);
    expect(first.statusCode).toBe(201);
    const token = first.json().token as string;
    const stored = await storedBody(key);
    expect(stored).toMatch(/^v1\./);
    expect(stored).not.toContain(token);
    const replay = await post('/test/idempotency/secret', key);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json()).toEqual({ token });
  });

  it('a sealed answer moved to another key does not open there', async () => {
    const [from, to] = [randomUUID(), randomUUID()];
    expect((await post('/test/idempotency/secret', from)).statusCode).toBe(201);
    expect((await post('/test/idempotency/secret', to)).statusCode).toBe(201);
    await t.store.db
      .updateTable('idempotency_keys')
      .set({ response_body: await storedBody(from) })
      .where('key', '=', to)
      .execute();
    const replay = await post('/test/idempotency/secret', to);
    expect(replay.statusCode).toBe(500);
    expect(replay.body).not.toContain('tok-');
  });
});

describe('claims without response listeners on sqlite', () => {
  let t: TestApp<never>;
  let caller: SeededAccount;
  let base: string;
  let hijacked = 0;
  beforeAll(async () => {
    t = await createTestApp('sqlite', {
      extraRoutes: (app) => {
        // What an idempotent answer carries while its handler runs: Node's own `finish` listener, none of Fastify's.
        app.post('/test/idempotency/listeners', { config: { auth: {}, idempotent: true } }, async (_request, reply) =>
          reply.code(201).send({ finish: reply.raw.listenerCount('finish'), error: reply.raw.listenerCount('error') }),
        );
        // An answer written past Fastify (no onSend): its claim is given back when the answer ends.
        app.post('/test/idempotency/hijacked', { config: { auth: {}, idempotent: true } }, async (_request, reply) => {
          reply.hijack();
          hijacked++;
          reply.raw.writeHead(200, { 'content-type': 'application/json' });
          reply.raw.end('{"hijacked":true}');
        });
      },
    });
    caller = await seedAccount(t.ctx);
    base = `http://127.0.0.1:${new URL(await t.app.listen({ host: '127.0.0.1', port: 0 })).port}`;
  });
  afterAll(async () => {
    await t.destroy();
  });

  const post = (path: string, key: string) =>
    fetch(`${base}${path}`, {
      method: 'POST',
      headers: { ...bearer(caller.apiKey), 'idempotency-key': key, 'content-type': 'application/json' },
      body: '{}',
    });

  it('an idempotent answer adds no listener to its response', async () => {
    const answer = await post('/test/idempotency/listeners', randomUUID());
    expect(answer.status).toBe(201);
    expect(await answer.json()).toEqual({ finish: 1, error: 0 });
  });

  it('a claim whose answer passed no onSend is given back when the answer ends: the key is not left busy', async () => {
    const key = randomUUID();
    const first = await post('/test/idempotency/hijacked', key);
    expect(await first.json()).toEqual({ hijacked: true });
    // Nothing was stored (no onSend), so the same key runs again instead of answering IDEMPOTENCY_IN_PROGRESS.
    const again = await post('/test/idempotency/hijacked', key);
    expect(again.status).toBe(200);
    expect(hijacked).toBe(2);
  });
});
