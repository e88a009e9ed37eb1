// The shared HTTP plumbing (issue 2 §4), exercised through a real app: envelopes and request ids, 404/405/413/415/422,
// cache-control, cursor pagination (forged cursors and limits), the rate limiters (in memory and on the real Redis)
// with their 429, and 500s that never show what went wrong inside.
import { randomUUID } from 'node:crypto';
import { ErrorEnvelope, PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MAX, PageQuery } from '@ark/shared';
import { Type } from '@sinclair/typebox';
import type { InjectOptions } from 'fastify';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../clock.js';
import { DomainError } from '../errors.js';
import { bearer, createTestApp, type SeededAccount, seedAccount, type TestApp, testConfig } from '../testing/app.js';
import { DIALECTS } from '../testing/stores.js';
import { fetchSize, Paginator } from './pagination.js';
import { MemoryRateLimiter, type RateLimiter, RedisRateLimiter } from './rate-limit.js';
import { withErrors } from './schemas.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const REDIS_URL = process.env.ARK_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

const ajv = new Ajv.default({ strict: false });
addFormats.default(ajv);
const isEnvelope = ajv.compile(ErrorEnvelope);

type Json = Record<string, any>;
interface Res {
  statusCode: number;
  headers: Record<string, unknown>;
  body: string;
  json(): Json;
}

/** The exact envelope: four fields, a fresh UUID request_id equal to the x-request-id header. */
function expectEnvelope(res: Res, status: number, code: string) {
  expect(res.statusCode, res.body).toBe(status);
  expect(String(res.headers['content-type'])).toMatch(/^application\/json/);
  const body = res.json();
  expect(isEnvelope(body), JSON.stringify(isEnvelope.errors)).toBe(true);
  expect(Object.keys(body)).toEqual(['error']);
  expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'request_id', 'retryable']);
  expect(body.error.code).toBe(code);
  expect(body.error.request_id).toMatch(UUID);
  expect(body.error.request_id).toBe(res.headers['x-request-id']);
  return body.error as { code: string; message: string; retryable: boolean; request_id: string };
}

describe('Paginator', () => {
  const paginator = new Paginator(testConfig().secretKey);

  it('round-trips a position through an opaque cursor of its own list', () => {
    const cursor = paginator.encode('keys:a', { at: '2026-01-01T00:00:00.000Z', id: 'x' });
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{32}$/);
    expect(paginator.decode('keys:a', cursor)).toEqual({ at: '2026-01-01T00:00:00.000Z', id: 'x' });
    expect(paginator.decode('keys:a', undefined)).toBeNull();
  });

  it('refuses forged, edited, foreign and malformed cursors with INVALID_CURSOR', () => {
    const cursor = paginator.encode('keys:a', { id: 1 });
    const [body, signature] = cursor.split('.') as [string, string];
    const edited = Buffer.from(JSON.stringify({ s: 'keys:a', p: { id: 2 } })).toString('base64url');
    const otherKey = new Paginator(testConfig().secretKey).encode('keys:a', { id: 1 });
    const flipped = `${body}.${signature.slice(0, -1)}${signature.endsWith('A') ? 'B' : 'A'}`;
    for (const bad of [
      `${edited}.${signature}`, // body edited, signature kept
      flipped,
      otherKey, // signed with another secret
      paginator.encode('keys:b', { id: 1 }), // another list
      `${body}.${signature}.extra`,
      `${body}.`,
      `.${signature}`,
      body,
      '',
      'abc.def',
      `${body}.${signature}${signature}`, // a longer signature
    ]) {
      let thrown: unknown;
      try {
        paginator.decode('keys:a', bad);
      } catch (error) {
        thrown = error;
      }
      expect(thrown, bad).toBeInstanceOf(DomainError);
      expect((thrown as DomainError).code).toBe('INVALID_CURSOR');
    }
  });

  it('builds pages from limit + 1 rows: the extra row only says that a next page exists', () => {
    const rows = Array.from({ length: 6 }, (_, i) => ({ id: i }));
    expect(fetchSize(5)).toBe(6);
    expect(fetchSize(undefined)).toBe(PAGE_LIMIT_DEFAULT + 1);
    const page = paginator.page(
      'rows',
      rows,
      5,
      (row) => row.id,
      (row) => row.id,
    );
    expect(page.items).toEqual([0, 1, 2, 3, 4]);
    expect(paginator.decode('rows', page.next_cursor ?? undefined)).toBe(4);
    const last = paginator.page(
      'rows',
      rows.slice(0, 5),
      5,
      (row) => row.id,
      (row) => row.id,
    );
    expect(last).toEqual({ items: [0, 1, 2, 3, 4], next_cursor: null });
    expect(
      paginator.page(
        'rows',
        [],
        undefined,
        (row: { id: number }) => row.id,
        (row) => row.id,
      ),
    ).toEqual({ items: [], next_cursor: null });
  });
});

/** The limiter contract, run on each implementation. */
function limiterContract(name: string, make: () => RateLimiter) {
  describe(`${name} rate limiter`, () => {
    let limiter: RateLimiter;
    beforeAll(() => {
      limiter = make();
    });
    afterAll(async () => {
      await limiter.close();
    });

    it('allows `limit` hits per fixed window, then refuses until the next window', async () => {
      const key = `test:${randomUUID()}`;
      const start = new Date(Date.UTC(2026, 0, 1, 0, 0, 0));
      const results: boolean[] = [];
      for (let i = 0; i < 5; i++) results.push(await limiter.consume(key, 3, 60_000, new Date(start.getTime() + i * 1000)));
      expect(results).toEqual([true, true, true, false, false]);
      // The next window starts afresh.
      expect(await limiter.consume(key, 3, 60_000, new Date(start.getTime() + 60_000))).toBe(true);
    });

    it('keeps keys and window lengths apart', async () => {
      const a = `test:${randomUUID()}`;
      const b = `test:${randomUUID()}`;
      const now = new Date(Date.UTC(2026, 0, 1, 0, 5, 0));
      expect(await limiter.consume(a, 1, 60_000, now)).toBe(true);
      expect(await limiter.consume(a, 1, 60_000, now)).toBe(false);
      expect(await limiter.consume(b, 1, 60_000, now)).toBe(true);
      expect(await limiter.consume(a, 1, 3_600_000, now)).toBe(true);
    });
  });
}

limiterContract('in-memory', () => new MemoryRateLimiter());
limiterContract('Redis', () => new RedisRateLimiter(new Redis(REDIS_URL, { maxRetriesPerRequest: 2 })));

describe('Redis rate limiter across replicas', () => {
  let a: Redis;
  let b: Redis;
  beforeAll(() => {
    a = new Redis(REDIS_URL, { maxRetriesPerRequest: 2 });
    b = new Redis(REDIS_URL, { maxRetriesPerRequest: 2 });
  });
  afterAll(() => {
    a.disconnect();
    b.disconnect();
  });

  it('shares one counter between two processes and lets Redis expire the window', async () => {
    const one = new RedisRateLimiter(a);
    const two = new RedisRateLimiter(b);
    const key = `test:${randomUUID()}`;
    const now = new Date();
    expect(await one.consume(key, 2, 60_000, now)).toBe(true);
    expect(await two.consume(key, 2, 60_000, now)).toBe(true);
    expect(await one.consume(key, 2, 60_000, now)).toBe(false);
    expect(await two.consume(key, 2, 60_000, now)).toBe(false);
    const keys = await a.keys(`ark:rl:${key}:*`);
    expect(keys).toHaveLength(1);
    const ttl = await a.pttl(keys[0] as string);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60_000);
    await a.del(...keys);
  });
});

describe.each(DIALECTS)('HTTP plumbing on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  let user: SeededAccount;
  let redis: Redis;
  let redisLimiter: RedisRateLimiter;
  const limitKey = `plumbing:${randomUUID()}`;
  const ITEMS = Array.from({ length: 45 }, (_, i) => ({ n: i }));

  beforeAll(async () => {
    redis = new Redis(REDIS_URL, { maxRetriesPerRequest: 2 });
    redisLimiter = new RedisRateLimiter(redis);
    t = await createTestApp(dialect, {
      configOverrides: { bodyLimitBytes: 4096 },
      extraRoutes(app, ctx) {
        const Body = Type.Object(
          { name: Type.String({ maxLength: 20 }), count: Type.Integer({ minimum: 0 }) },
          { additionalProperties: false },
        );
        app.post(
          '/test/plumbing/echo',
          { config: { auth: {} }, schema: { body: Body, response: withErrors({ 200: Body }) } },
          async (request) => request.body,
        );
        app.get('/test/plumbing/public', { config: { auth: 'public', cache: 'public' } }, async () => ({ ok: true }));
        app.get('/test/plumbing/private', { config: { auth: {} } }, async () => ({ ok: true }));
        // A list of fixed items, paged by the shared paginator: positions are item numbers.
        app.get(
          '/test/plumbing/items',
          { config: { auth: 'public', cache: 'public' }, schema: { querystring: PageQuery } },
          async (request) => {
            const query = request.query as { cursor?: string; limit?: number };
            const after = ctx.paginator.decode<number>('plumbing-items', query.cursor) ?? -1;
            const rows = ITEMS.filter((item) => item.n > after).slice(0, fetchSize(query.limit));
            return ctx.paginator.page(
              'plumbing-items',
              rows,
              query.limit,
              (row) => row.n,
              (row) => row,
            );
          },
        );
        app.get('/test/plumbing/limited', { config: { auth: 'public' } }, async () => {
          if (!(await redisLimiter.consume(limitKey, 2, 60_000, ctx.clock.now()))) throw new DomainError('UNAVAILABLE');
          return { ok: true };
        });
        app.get('/test/plumbing/limited-memory', { config: { auth: 'public' } }, async () => {
          if (!(await ctx.rateLimiter.consume(limitKey, 1, 60_000, ctx.clock.now()))) throw new DomainError('UNAVAILABLE');
          return { ok: true };
        });
        app.get('/test/plumbing/boom', { config: { auth: 'public' } }, async () => {
          throw new Error('secret detail: SELECT password_hash FROM accounts WHERE id = 1 at /srv/ark/db.ts:12:3');
        });
        app.get('/test/plumbing/boom-string', { config: { auth: 'public' } }, async () => {
          throw 'a thrown string with a secret';
        });
        app.get('/test/plumbing/boom-500', { config: { auth: 'public' } }, async () => {
          throw Object.assign(new Error('upstream said: token=abc123'), { statusCode: 502 });
        });
        app.get(
          '/test/plumbing/bad-response',
          { config: { auth: 'public' }, schema: { response: { 200: Type.Object({ must: Type.String() }) } } },
          async () => ({ nope: 'secret value' }) as unknown as { must: string },
        );
        // A body schema: a route that declares none takes no body (json-body.ts), so its body would not count.
        app.post(
          '/test/plumbing/idempotent',
          { config: { auth: {}, idempotent: true }, schema: { body: Type.Object({ other: Type.Optional(Type.Integer()) }) } },
          async () => ({ ok: true }),
        );
      },
    });
    user = await seedAccount(t.ctx, { withTotp: true, stepUp: true });
  });
  afterAll(async () => {
    await t?.destroy();
    await redis?.del(...(await redis.keys(`ark:rl:${limitKey}:*`)), 'ark:rl:none');
    redis?.disconnect();
  });

  const inject = (options: InjectOptions) => t.app.inject(options) as unknown as Promise<Res>;
  const auth = () => bearer(user.sessionToken);

  describe('envelopes and request ids', () => {
    it('sends a fresh request id on every answer, never the one the client sent', async () => {
      const ok = await inject({ method: 'GET', url: '/api/v1/account', headers: { ...auth(), 'x-request-id': 'client-chosen' } });
      expect(ok.statusCode).toBe(200);
      expect(ok.headers['x-request-id']).toMatch(UUID);
      const first = expectEnvelope(
        await inject({ method: 'GET', url: '/api/v1/account', headers: { 'x-request-id': 'client-chosen' } }),
        401,
        'UNAUTHENTICATED',
      );
      const second = expectEnvelope(await inject({ method: 'GET', url: '/api/v1/account' }), 401, 'UNAUTHENTICATED');
      expect(first.request_id).not.toBe(second.request_id);
      expect(first.request_id).not.toBe('client-chosen');
    });

    it('answers an unknown route 404 whoever asks, and a method the path does not serve 404 or 405', async () => {
      expect(expectEnvelope(await inject({ method: 'GET', url: '/api/v1/no-such-thing' }), 404, 'NOT_FOUND').message).toContain(
        '/api/v1/no-such-thing',
      );
      expectEnvelope(await inject({ method: 'GET', url: '/api/v1/no-such-thing?x=1', headers: bearer('ark_wrong') }), 404, 'NOT_FOUND');
      expectEnvelope(await inject({ method: 'GET', url: '/nope', headers: auth() }), 404, 'NOT_FOUND');
      const wrongMethod = await inject({ method: 'PUT', url: '/api/v1/account', headers: auth(), payload: {} });
      expect([404, 405]).toContain(wrongMethod.statusCode);
      expectEnvelope(wrongMethod, wrongMethod.statusCode, wrongMethod.statusCode === 404 ? 'NOT_FOUND' : 'METHOD_NOT_ALLOWED');
    });

    it('answers a missing or wrong credential 401', async () => {
      expectEnvelope(await inject({ method: 'GET', url: '/test/plumbing/private' }), 401, 'UNAUTHENTICATED');
      expectEnvelope(
        await inject({ method: 'GET', url: '/test/plumbing/private', headers: bearer('ark_garbage') }),
        401,
        'UNAUTHENTICATED',
      );
      expectEnvelope(
        await inject({ method: 'GET', url: '/test/plumbing/private', headers: { authorization: 'Basic YTpi' } }),
        401,
        'UNAUTHENTICATED',
      );
    });
  });

  describe('bodies', () => {
    it('answers malformed JSON 422 MALFORMED_JSON', async () => {
      for (const payload of ['{"name":', '', '{"name": "a"}}', "{'name': 'a'}"]) {
        const res = await inject({
          method: 'POST',
          url: '/test/plumbing/echo',
          headers: { ...auth(), 'content-type': 'application/json' },
          payload,
        });
        expectEnvelope(res, 422, 'MALFORMED_JSON');
      }
    });

    it('answers invalid input 422 with a message that names the field, with no coercion and no extra properties', async () => {
      const post = (payload: unknown) => inject({ method: 'POST', url: '/test/plumbing/echo', headers: auth(), payload: payload as Json });
      expect(expectEnvelope(await post({ name: 'a', count: '1' }), 422, 'VALIDATION_FAILED').message).toContain('count');
      expect(expectEnvelope(await post({ name: 'a', count: 1, admin: true }), 422, 'VALIDATION_FAILED').message).toContain('admin');
      expect(expectEnvelope(await post({ count: 1 }), 422, 'VALIDATION_FAILED').message).toContain('name');
      expect(expectEnvelope(await post({ name: 'a'.repeat(21), count: 1 }), 422, 'VALIDATION_FAILED').message).toContain('name');
      const ok = await post({ name: 'a', count: 1 });
      expect(ok.statusCode).toBe(200);
      expect(ok.json()).toEqual({ name: 'a', count: 1 });
    });

    it('answers a body over the limit 413 BODY_TOO_LARGE, before the route sees it', async () => {
      const payload = JSON.stringify({ name: 'a', count: 1, pad: 'x'.repeat(t.ctx.config.bodyLimitBytes) });
      expectEnvelope(
        await inject({ method: 'POST', url: '/test/plumbing/echo', headers: { ...auth(), 'content-type': 'application/json' }, payload }),
        413,
        'BODY_TOO_LARGE',
      );
      // A declared length over the limit is refused too, whatever actually arrives.
      const declared = await inject({
        method: 'POST',
        url: '/test/plumbing/echo',
        headers: { ...auth(), 'content-type': 'application/json', 'content-length': String(t.ctx.config.bodyLimitBytes + 1) },
        payload: '{}',
      });
      expect(declared.statusCode).toBeGreaterThanOrEqual(400);
      expect(declared.statusCode).toBeLessThan(500);
      expectEnvelope(declared, declared.statusCode, declared.json().error.code);
    });

    it('answers an unsupported media type 415', async () => {
      for (const type of ['application/xml', 'application/x-www-form-urlencoded']) {
        const res = await inject({
          method: 'POST',
          url: '/test/plumbing/echo',
          headers: { ...auth(), 'content-type': type },
          payload: 'name=a&count=1',
        });
        expectEnvelope(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
      }
    });
  });

  describe('cache-control', () => {
    it('is private, no-store on account data and errors, no-store on public catalog answers', async () => {
      const cacheOf = async (url: string, headers: Record<string, string> = {}) =>
        (await inject({ method: 'GET', url, headers })).headers['cache-control'];
      expect(await cacheOf('/api/v1/account', auth())).toBe('private, no-store');
      expect(await cacheOf('/test/plumbing/private', auth())).toBe('private, no-store');
      expect(await cacheOf('/test/plumbing/private')).toBe('private, no-store');
      expect(await cacheOf('/test/plumbing/public')).toBe('no-store');
      expect(await cacheOf('/openapi.json')).toBe('no-store');
      expect(await cacheOf('/api/v1/no-such-thing')).toBe('private, no-store');
    });
  });

  describe('pagination', () => {
    const page = (query: string) => inject({ method: 'GET', url: `/test/plumbing/items${query}` });

    it('pages through every item once with opaque cursors, 20 by default', async () => {
      const first = await page('');
      expect(first.statusCode).toBe(200);
      expect(first.json().items).toHaveLength(PAGE_LIMIT_DEFAULT);
      const seen: number[] = [];
      let cursor: string | null = null;
      do {
        const res: Res = await page(`?limit=7${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        expect(res.statusCode).toBe(200);
        const body = res.json() as { items: Array<{ n: number }>; next_cursor: string | null };
        expect(Object.keys(body).sort()).toEqual(['items', 'next_cursor']);
        seen.push(...body.items.map((item) => item.n));
        cursor = body.next_cursor;
      } while (cursor !== null);
      expect(seen).toEqual(ITEMS.map((item) => item.n));
      expect((await page(`?limit=${PAGE_LIMIT_MAX}`)).json().items).toHaveLength(ITEMS.length);
    });

    it('answers a limit outside 1..100 or a forged cursor 422', async () => {
      for (const limit of ['0', '101', '-1', 'abc', '1.5', '']) {
        expectEnvelope(await page(`?limit=${limit}`), 422, 'VALIDATION_FAILED');
      }
      const next = (await page('?limit=2')).json().next_cursor as string;
      const [body] = next.split('.') as [string];
      const forged = Buffer.from(JSON.stringify({ s: 'plumbing-items', p: 40 })).toString('base64url');
      for (const cursor of [
        'abc.def',
        `${forged}.${next.split('.')[1]}`,
        `${body}.${'A'.repeat(32)}`,
        t.ctx.paginator.encode('another-list', 1),
      ]) {
        expectEnvelope(await page(`?cursor=${encodeURIComponent(cursor)}`), 422, 'INVALID_CURSOR');
      }
      expectEnvelope(await page(`?cursor=${'a'.repeat(513)}`), 422, 'VALIDATION_FAILED');
    });
  });

  describe('rate limits', () => {
    it('answers 429 UNAVAILABLE, retryable, without Retry-After, from the Redis limiter', async () => {
      expect((await inject({ method: 'GET', url: '/test/plumbing/limited' })).statusCode).toBe(200);
      expect((await inject({ method: 'GET', url: '/test/plumbing/limited' })).statusCode).toBe(200);
      const limited = await inject({ method: 'GET', url: '/test/plumbing/limited' });
      expect(expectEnvelope(limited, 429, 'UNAVAILABLE').retryable).toBe(true);
      expect(limited.headers['retry-after']).toBeUndefined();
      // The next window (the clock is the app's ManualClock) opens again.
      await t.clock.advance(60_000);
      expect((await inject({ method: 'GET', url: '/test/plumbing/limited' })).statusCode).toBe(200);
    });

    it('answers 429 the same way from the in-process limiter', async () => {
      expect((await inject({ method: 'GET', url: '/test/plumbing/limited-memory' })).statusCode).toBe(200);
      const limited = await inject({ method: 'GET', url: '/test/plumbing/limited-memory' });
      expect(expectEnvelope(limited, 429, 'UNAVAILABLE').retryable).toBe(true);
      expect(limited.headers['retry-after']).toBeUndefined();
    });
  });

  describe('server errors', () => {
    it('answers a thrown Error with a generic 500 envelope: no message, stack, SQL or secret', async () => {
      for (const url of ['/test/plumbing/boom', '/test/plumbing/boom-string', '/test/plumbing/boom-500', '/test/plumbing/bad-response']) {
        const res = await inject({ method: 'GET', url });
        const error = expectEnvelope(res, 500, 'INTERNAL');
        expect(error.message).toBe('Internal error.');
        expect(error.retryable).toBe(true);
        expect(res.body).not.toMatch(/secret|SELECT|password|token=|stack|\.ts:\d+|\bat /i);
        expect(res.headers['cache-control']).toBe('private, no-store');
      }
    });
  });

  describe('idempotency', () => {
    it('requires a key, replays a repeat and refuses the key with another body', async () => {
      const res = await inject({ method: 'POST', url: '/test/plumbing/idempotent', headers: auth(), payload: {} });
      expect(expectEnvelope(res, 422, 'IDEMPOTENCY_KEY_REQUIRED').message).toContain('Idempotency-Key');
      const key = randomUUID();
      const first = await inject({
        method: 'POST',
        url: '/test/plumbing/idempotent',
        headers: { ...auth(), 'idempotency-key': key },
        payload: {},
      });
      expect(first.statusCode).toBe(200);
      const replay = await inject({
        method: 'POST',
        url: '/test/plumbing/idempotent',
        headers: { ...auth(), 'idempotency-key': key },
        payload: {},
      });
      expect(replay.statusCode).toBe(200);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expectEnvelope(
        await inject({
          method: 'POST',
          url: '/test/plumbing/idempotent',
          headers: { ...auth(), 'idempotency-key': key },
          payload: { other: 1 },
        }),
        409,
        'IDEMPOTENCY_CONFLICT',
      );
    });
  });
});
