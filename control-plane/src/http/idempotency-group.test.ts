import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppContext } from './context.js';
import { bearer, createTestApp, type SeededAccount, seedAccount, type TestApp } from '../testing/app.js';
import { DIALECTS } from '../testing/stores.js';

// Many idempotent requests at once: on SQLite their answers share commits (group commit); every request must still
// get its own answer stored before its reply, and replay it afterwards. On Postgres the same holds with a row per claim.

/** A transaction that keeps the store busy for a turn of the event loop, as a handler's effect does: answers of
 * other requests queue meanwhile, so they are written in groups. */
async function holdTheStore(ctx: AppContext): Promise<void> {
  await ctx.store.db.transaction().execute(async (trx) => {
    await trx.selectFrom('accounts').select('id').limit(1).execute();
    await new Promise((resolve) => setImmediate(resolve));
  });
}

describe.each(DIALECTS)('concurrent idempotent requests on %s', (dialect) => {
  let t: TestApp<never>;
  let caller: SeededAccount;
  let served = 0;
  beforeAll(async () => {
    t = await createTestApp(dialect, {
      extraRoutes: (app, ctx) => {
        app.post('/test/idempotency/count', { config: { auth: {}, idempotent: true } }, async (_request, reply) => {
          await holdTheStore(ctx);
          return reply.code(201).send({ served: ++served });
        });
      },
    });
    caller = await seedAccount(t.ctx);
  });
  afterAll(async () => {
    await t.destroy();
  });

  it('stores every answer before its reply, and replays each one', async () => {
    const keys = Array.from({ length: 40 }, () => randomUUID());
    const post = (key: string) =>
      t.app.inject({
        method: 'POST',
        url: '/test/idempotency/count',
        headers: { ...bearer(caller.apiKey), 'idempotency-key': key },
        payload: {},
      });
    const first = await Promise.all(keys.map(post));
    expect(first.map((r) => r.statusCode)).toEqual(keys.map(() => 201));
    expect(new Set(first.map((r) => r.json().served)).size).toBe(keys.length);
    const stored = await t.store.db.selectFrom('idempotency_keys').select(['key', 'state']).where('key', 'in', keys).execute();
    expect(stored).toHaveLength(keys.length);
    expect(stored.every((row) => row.state === 'done')).toBe(true);

    const replays = await Promise.all(keys.map(post));
    replays.forEach((replay, i) => {
      expect(replay.statusCode).toBe(201);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.json()).toEqual(first[i]?.json());
    });
    expect(served).toBe(keys.length);
  });
});

describe('a failing answer among concurrent ones on sqlite', () => {
  let t: TestApp<never>;
  let caller: SeededAccount;
  beforeAll(async () => {
    t = await createTestApp('sqlite', {
      extraRoutes: (app, ctx) => {
        app.post('/test/idempotency/plain', { config: { auth: {}, idempotent: true } }, async (_request, reply) => {
          await holdTheStore(ctx);
          return reply.code(201).send({ ok: true });
        });
        // Writes a row under its own key behind the layer's back (as another process could), so storing its answer
        // fails with a unique violation.
        app.post('/test/idempotency/sabotage', { config: { auth: {}, idempotent: true } }, async (request, reply) => {
          const now = new Date().toISOString();
          await ctx.store.db
            .insertInto('idempotency_keys')
            .values({
              principal: request.principal?.accountId ?? '',
              route: 'POST /test/idempotency/sabotage',
              key: String(request.headers['idempotency-key']).toLowerCase(),
              request_hash: 'x',
              state: 'done',
              status_code: 299n,
              response_body: null,
              locked_until: now,
              created_at: now,
            })
            .execute();
          await holdTheStore(ctx);
          return reply.code(201).send({ ok: true });
        });
      },
    });
    caller = await seedAccount(t.ctx);
  });
  afterAll(async () => {
    await t.destroy();
  });

  it('fails only its own request; the answers grouped with it are stored', async () => {
    const keys = Array.from({ length: 20 }, () => randomUUID());
    const sabotaged = randomUUID();
    const send = (url: string, key: string) =>
      t.app.inject({ method: 'POST', url, headers: { ...bearer(caller.apiKey), 'idempotency-key': key }, payload: {} });
    const [bad, ...good] = await Promise.all([
      send('/test/idempotency/sabotage', sabotaged),
      ...keys.map((key) => send('/test/idempotency/plain', key)),
    ]);
    expect(bad?.statusCode).toBe(500);
    expect(bad?.json().error.code).toBe('INTERNAL');
    expect(good.map((r) => r.statusCode)).toEqual(keys.map(() => 201));
    const stored = await t.store.db.selectFrom('idempotency_keys').select('key').where('key', 'in', keys).execute();
    expect(stored).toHaveLength(keys.length);
  });
});
