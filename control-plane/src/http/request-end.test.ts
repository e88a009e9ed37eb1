import { Writable } from 'node:stream';
import Fastify, { type FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createTestApp, type TestApp } from '../testing/app.js';
import { type RequestEnd, observeRequestEnds } from './request-end.js';

const listening = async (app: FastifyInstance) => `http://127.0.0.1:${new URL(await app.listen({ host: '127.0.0.1', port: 0 })).port}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** What the listeners saw, as [method, route pattern, status]. */
const seen = (ends: RequestEnd[]) => ends.map((end) => [end.request.method, end.request.routeOptions.url ?? 'unmatched', end.statusCode]);

describe('request ends', () => {
  let app: FastifyInstance;
  let other: FastifyInstance;
  let base: string;
  let otherBase: string;
  const ends: RequestEnd[] = [];
  const otherEnds: RequestEnd[] = [];

  beforeAll(async () => {
    app = Fastify({ logger: false });
    observeRequestEnds(app, [(end) => ends.push(end)]);
    // What a response carries while its handler runs: Node's own `finish` listener, and nothing from Fastify.
    app.get('/listeners', async (_request, reply) => ({
      finish: reply.raw.listenerCount('finish'),
      error: reply.raw.listenerCount('error'),
    }));
    app.get('/slow', async () => {
      await sleep(20);
      return {};
    });
    app.post('/made', async (_request, reply) => reply.code(201).send({}));
    base = await listening(app);
    other = Fastify({ logger: false });
    observeRequestEnds(other, [(end) => otherEnds.push(end)]);
    other.get('/elsewhere', async () => ({}));
    otherBase = await listening(other);
  });
  afterAll(async () => {
    await app.close();
    await other.close();
  });

  it('are seen once per answer over HTTP, 404s included, with no listener added to any response', async () => {
    const listeners = await (await fetch(`${base}/listeners`)).json();
    expect(listeners).toEqual({ finish: 1, error: 0 });
    // The same app with an onResponse hook: Fastify's listeners, on every response.
    const hooked = Fastify({ logger: false });
    hooked.addHook('onResponse', (_request, _reply, done) => done());
    hooked.get('/listeners', async (_request, reply) => ({
      finish: reply.raw.listenerCount('finish'),
      error: reply.raw.listenerCount('error'),
    }));
    expect(await (await fetch(`${await listening(hooked)}/listeners`)).json()).toEqual({ finish: 2, error: 1 });
    await hooked.close();

    expect((await fetch(`${base}/slow`)).status).toBe(200);
    expect((await fetch(`${base}/made`, { method: 'POST' })).status).toBe(201);
    expect((await fetch(`${base}/nowhere`)).status).toBe(404);
    await vi.waitFor(() => expect(ends).toHaveLength(4));
    expect(seen(ends)).toEqual([
      ['GET', '/listeners', 200],
      ['GET', '/slow', 200],
      ['POST', '/made', 201],
      ['GET', 'unmatched', 404],
    ]);
    expect(ends[1]?.elapsedMs).toBeGreaterThanOrEqual(19);
  });

  it('are seen for injected requests too, and each app sees only its own', async () => {
    ends.length = 0;
    expect((await app.inject({ method: 'GET', url: '/slow' })).statusCode).toBe(200);
    expect(seen(ends)).toEqual([['GET', '/slow', 200]]);
    expect(ends[0]?.elapsedMs).toBeGreaterThanOrEqual(19);

    expect((await fetch(`${otherBase}/elsewhere`)).status).toBe(200);
    await vi.waitFor(() => expect(otherEnds).toHaveLength(1));
    expect(seen(otherEnds)).toEqual([['GET', '/elsewhere', 200]]);
    expect(ends).toHaveLength(1);
  });
});

describe("the control plane's request lines", () => {
  let t: TestApp<never>;
  let base: string;
  const lines: Array<Record<string, unknown>> = [];

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    t = (await createTestApp('sqlite', { logger: pino({ level: 'info' }, sink) })) as TestApp<never>;
    base = await listening(t.app);
  });
  afterAll(async () => {
    await t?.destroy();
  });

  it("are one line per request, with the request, its status, its time and the request's id", async () => {
    const health = await fetch(`${base}/healthz`);
    // An idempotent route (hooks of its own, none on the response): one line each, as every route.
    const refused = await fetch(`${base}/api/v1/account/api-keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': crypto.randomUUID() },
      body: '{}',
    });
    expect(refused.status).toBe(401);
    const injected = await t.app.inject({ method: 'GET', url: '/healthz' });
    const ids = [health.headers.get('x-request-id'), refused.headers.get('x-request-id'), injected.headers['x-request-id']];
    await vi.waitFor(() => expect(lines.filter((line) => line.msg === 'request completed')).toHaveLength(3));

    const port = Number(new URL(base).port);
    const [healthId, refusedId, injectedId] = ids;
    const of = (id: unknown) => lines.filter((line) => line.reqId === id).map(({ time: _t, pid: _p, hostname: _h, ...rest }) => rest);
    expect(of(healthId)).toEqual([
      {
        level: 30,
        reqId: healthId,
        req: { method: 'GET', url: '/healthz', host: `127.0.0.1:${port}`, remoteAddress: '127.0.0.1', remotePort: expect.any(Number) },
        res: { statusCode: 200 },
        responseTime: expect.any(Number),
        msg: 'request completed',
      },
    ]);
    expect(
      of(refusedId).map((line) => [line.msg, (line.req as { url?: string }).url, (line.res as { statusCode?: number }).statusCode]),
    ).toEqual([['request completed', '/api/v1/account/api-keys', 401]]);
    expect(of(injectedId).map((line) => line.msg)).toEqual(['request completed']);
  });
});
