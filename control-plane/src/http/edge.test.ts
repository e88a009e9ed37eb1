// The edge of the HTTP server (issue 7, items 4, 5 and 7), over a real listening socket with raw bytes: requests
// Node's parser refuses, oversized URLs and headers, clients that trickle their request, too many connections from
// one address, a wrong method on a known path and deeply nested bodies. Every answer is the contract's envelope
// with a fresh request id in the body and in x-request-id, cache-control and the security headers.
import { randomUUID } from 'node:crypto';
import { ERROR_CATALOG, ErrorEnvelope } from '@ark/shared';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../clock.js';
import { bearer, createTestApp, type SeededAccount, seedAccount, type TestApp } from '../testing/app.js';
import { openSocket, type RawAnswer, readUntilClosed, sendRaw, trickle } from '../testing/raw-http.js';
import { clientErrorCode, connectionsCheckingIntervalMs } from './edge.js';
import { JSON_BODY_MAX_DEPTH, jsonNestsDeeperThan } from './json-body.js';
import { CHANNEL_PATH } from '@ark/shared';
import { WebSocket } from 'ws';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ajv = new Ajv.default({ strict: false });
addFormats.default(ajv);
const isEnvelope = ajv.compile(ErrorEnvelope);

type Answer = Pick<RawAnswer, 'status' | 'headers' | 'body'>;

/** The exact envelope of `code` with the catalog's status, its request id also in x-request-id, and the edge headers. */
function expectEnvelope(answer: Answer, code: keyof typeof ERROR_CATALOG): string {
  expect(answer.status, answer.body).toBe(ERROR_CATALOG[code].status);
  expect(answer.headers['content-type']).toMatch(/^application\/json/);
  const body = JSON.parse(answer.body);
  expect(isEnvelope(body), JSON.stringify(isEnvelope.errors)).toBe(true);
  expect(Object.keys(body)).toEqual(['error']);
  expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'request_id', 'retryable']);
  expect(body.error).toMatchObject({ code, retryable: ERROR_CATALOG[code].retryable });
  expect(body.error.request_id).toMatch(UUID);
  expect(answer.headers['x-request-id']).toBe(body.error.request_id);
  expect(answer.headers['cache-control']).toBe('private, no-store');
  expect(answer.headers['x-content-type-options']).toBe('nosniff');
  expect(answer.headers['referrer-policy']).toBe('no-referrer');
  expect(answer.headers['strict-transport-security']).toMatch(/^max-age=\d+/);
  return body.error.request_id;
}

describe('edge helpers', () => {
  it('maps parser failures to catalog codes', () => {
    expect(clientErrorCode({ code: 'HPE_HEADER_OVERFLOW' })).toBe('HEADERS_TOO_LARGE');
    expect(clientErrorCode({ code: 'ERR_HTTP_REQUEST_TIMEOUT' })).toBe('REQUEST_TIMEOUT');
    expect(clientErrorCode({ code: 'HPE_UNEXPECTED_CONTENT_LENGTH' })).toBe('MALFORMED_REQUEST');
    expect(clientErrorCode({})).toBe('MALFORMED_REQUEST');
  });

  it('checks the timeouts often enough for a cut to land near its limit', () => {
    expect(connectionsCheckingIntervalMs({ requestTimeoutMs: 60_000, headersTimeoutMs: 15_000 })).toBe(1000);
    expect(connectionsCheckingIntervalMs({ requestTimeoutMs: 1000, headersTimeoutMs: 600 })).toBe(300);
  });

  it('measures nesting without being fooled by brackets inside strings', () => {
    expect(jsonNestsDeeperThan('[[[]]]', 3)).toBe(false);
    expect(jsonNestsDeeperThan('[[[[]]]]', 3)).toBe(true);
    expect(jsonNestsDeeperThan('{"a":"[[[[[[\\"[[[["}', 1)).toBe(false);
    expect(jsonNestsDeeperThan(`{"a":${'['.repeat(64)}${']'.repeat(64)}}`, 64)).toBe(true);
  });
});

describe('the HTTP edge, over a real socket', () => {
  let t: TestApp<ManualClock>;
  let port: number;
  let host: SeededAccount;
  const MAX_CONNECTIONS = 4;

  beforeAll(async () => {
    t = await createTestApp('sqlite', {
      configOverrides: {
        publicBaseUrl: 'https://ark.example.test',
        httpRequestTimeoutMs: 1500,
        httpHeadersTimeoutMs: 1000,
        httpMaxConnectionsPerAddress: MAX_CONNECTIONS,
      },
    });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const address = t.app.server.address();
    port = typeof address === 'object' && address ? address.port : 0;
    host = await seedAccount(t.ctx, { role: 'host', stepUp: true });
  });
  afterAll(async () => {
    await t?.destroy();
  });

  const get = (path: string, extra = '') => `GET ${path} HTTP/1.1\r\nHost: ark.example.test\r\n${extra}Connection: close\r\n\r\n`;

  describe('requests the parser refuses', () => {
    it('answers a URL or headers over 16 KB 431 HEADERS_TOO_LARGE', async () => {
      const ids = new Set<string>();
      ids.add(expectEnvelope(await sendRaw(port, get(`/api/v1/templates?x=${'a'.repeat(17 * 1024)}`)), 'HEADERS_TOO_LARGE'));
      ids.add(
        expectEnvelope(await sendRaw(port, get('/api/v1/templates', `X-Padding: ${'a'.repeat(17 * 1024)}\r\n`)), 'HEADERS_TOO_LARGE'),
      );
      const many = Array.from({ length: 400 }, (_, i) => `X-H${i}: ${'b'.repeat(40)}\r\n`).join('');
      ids.add(expectEnvelope(await sendRaw(port, get('/api/v1/templates', many)), 'HEADERS_TOO_LARGE'));
      expect(ids.size).toBe(3);
    });

    const malformed: Array<[string, string]> = [
      [
        'both Content-Length and Transfer-Encoding',
        'POST /api/v1/accounts HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n',
      ],
      [
        'two Content-Lengths',
        'POST /api/v1/accounts HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}',
      ],
      ['an obs-folded header', 'GET /api/v1/templates HTTP/1.1\r\nHost: x\r\nX-Folded: one\r\n two\r\n\r\n'],
      ['a bad request line', 'GET /api/v1/templates HTTP/9.x\r\nHost: x\r\n\r\n'],
      ['a request line that is not one', 'HELLO\r\n\r\n'],
      ['a space in the target', 'GET /api/v1/tem plates HTTP/1.1\r\nHost: x\r\n\r\n'],
      [
        'a bad chunk size',
        'POST /api/v1/accounts HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n',
      ],
      ['a control character in a header', 'GET /api/v1/templates HTTP/1.1\r\nHost: x\r\nX-Bad: a\u0001b\r\n\r\n'],
    ];
    for (const [name, bytes] of malformed) {
      it(`answers ${name} 400 MALFORMED_REQUEST, and closes`, async () => {
        const answer = await sendRaw(port, bytes);
        expectEnvelope(answer, 'MALFORMED_REQUEST');
        expect(answer.headers.connection).toBe('close');
        expect(answer.closed).toBe(true);
      });
    }

    it('still serves well-formed requests on the same server', async () => {
      const answer = await sendRaw(port, get('/healthz'));
      expect(answer.status).toBe(200);
      expect(answer.headers['x-content-type-options']).toBe('nosniff');
    });
  });

  describe('slow clients', () => {
    it('answers a body trickled a byte at a time 408 REQUEST_TIMEOUT at the request timeout, and closes', async () => {
      const head = 'POST /api/v1/accounts HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n';
      const answer = await trickle(port, head, '{"email":"'.padEnd(200, 'a'), 100, 6000);
      expect(answer.closed).toBe(true);
      expectEnvelope(answer, 'REQUEST_TIMEOUT');
      // 1.5 s, checked every 0.5 s; far from Node's default of 300 s.
      expect(answer.elapsedMs).toBeGreaterThanOrEqual(1400);
      expect(answer.elapsedMs).toBeLessThan(3500);
    });

    it('answers headers trickled a byte at a time 408 at the headers timeout', async () => {
      const answer = await trickle(port, 'GET /api/v1/templates HTTP/1.1\r\nHost: x\r\n', 'X-Slow: '.padEnd(200, 'a'), 100, 6000);
      expect(answer.closed).toBe(true);
      expectEnvelope(answer, 'REQUEST_TIMEOUT');
      expect(answer.elapsedMs).toBeLessThan(3000);
    });

    it('closes a connection that never sends a request', async () => {
      const socket = await openSocket(port);
      const answer = await readUntilClosed(socket, 6000);
      expect(answer.closed).toBe(true);
      expect(answer.elapsedMs).toBeLessThan(3500);
      if (answer.status !== 0) expectEnvelope(answer, 'REQUEST_TIMEOUT');
    });

    it('lets a client that sends its request at an ordinary pace through', async () => {
      const body = JSON.stringify({ email: `pace-${randomUUID()}@example.test`, password: 'correct horse battery staple' });
      const head = `POST /api/v1/accounts HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`;
      const socket = await openSocket(port);
      const answer = readUntilClosed(socket, 5000);
      socket.write(head);
      await new Promise((resolve) => setTimeout(resolve, 300));
      socket.write(body);
      const result = await answer;
      expect(result.status, result.body).toBeLessThan(500);
      expect(result.status).not.toBe(408);
    });
  });

  describe('connections per address', () => {
    it(`answers connection ${MAX_CONNECTIONS + 1} from one address 429 UNAVAILABLE and closes it; a freed slot is reused`, async () => {
      const held = await Promise.all(Array.from({ length: MAX_CONNECTIONS }, () => openSocket(port)));
      try {
        const refused = await sendRaw(port, get('/healthz'), 3000);
        expect(refused.closed).toBe(true);
        expectEnvelope(refused, 'UNAVAILABLE');
        const first = held.shift();
        const closed = new Promise((resolve) => first?.once('close', resolve));
        first?.destroy();
        await closed;
        // The server sees the close a moment after the client does.
        await new Promise((resolve) => setTimeout(resolve, 50));
        const admitted = await sendRaw(port, get('/healthz'), 3000);
        expect(admitted.status).toBe(200);
      } finally {
        for (const socket of held) socket.destroy();
      }
    });
  });

  describe('agent channels from one address', () => {
    it(`hold more than ${MAX_CONNECTIONS} channels (a farm behind one NAT address) without taking the address's HTTP slots`, async () => {
      const channels = await Promise.all(
        Array.from({ length: MAX_CONNECTIONS + 2 }, async () => {
          const ws = new WebSocket(`ws://127.0.0.1:${port}${CHANNEL_PATH}?v=1`);
          // The gateway's first frame, the challenge, says the channel is open.
          await new Promise<void>((resolve, reject) => {
            ws.once('message', () => resolve());
            ws.once('error', reject);
            ws.once('unexpected-response', (_request, response) => reject(new Error(`upgrade refused: ${response.statusCode}`)));
          });
          return ws;
        }),
      );
      try {
        expect(channels.every((ws) => ws.readyState === WebSocket.OPEN)).toBe(true);
        const admitted = await sendRaw(port, get('/healthz'), 3000);
        expect(admitted.status).toBe(200);
      } finally {
        for (const ws of channels) ws.terminate();
      }
    });
  });

  describe('routing', () => {
    it('answers a wrong method on a known path 405 METHOD_NOT_ALLOWED with Allow; an unknown path stays 404', async () => {
      const put = await t.app.inject({ method: 'PUT', url: '/api/v1/account', headers: bearer(host.apiKey), payload: {} });
      expectEnvelope({ status: put.statusCode, headers: put.headers as Record<string, string>, body: put.body }, 'METHOD_NOT_ALLOWED');
      expect(put.headers.allow).toBe('GET, HEAD');
      const del = await t.app.inject({ method: 'DELETE', url: `/api/v1/jobs/${randomUUID()}` });
      expect(del.statusCode).toBe(405);
      expect(del.headers.allow).toBe('GET, HEAD');
      const post = await t.app.inject({ method: 'PATCH', url: '/api/v1/account/api-keys' });
      expect(post.headers.allow).toBe('GET, HEAD, POST');
      const unknown = await t.app.inject({ method: 'PUT', url: '/api/v1/nothing-here' });
      expect(unknown.statusCode).toBe(404);
      expect(unknown.headers.allow).toBeUndefined();
      // The route is what is wrong first: a body of a type nothing parses, or malformed JSON, does not turn it into 415/422.
      for (const [type, payload] of [
        ['text/plain', 'hello'],
        ['application/xml', '<a/>'],
        ['application/json', '{"broken":'],
      ] as const) {
        const odd = await t.app.inject({ method: 'DELETE', url: '/api/v1/billing/balance', headers: { 'content-type': type }, payload });
        expect(odd.statusCode, `${type}: ${odd.body}`).toBe(405);
        expect(odd.headers.allow).toBe('GET, HEAD');
        const nowhere = await t.app.inject({ method: 'POST', url: '/api/v1/nothing-here', headers: { 'content-type': type }, payload });
        expect(nowhere.statusCode, `${type}: ${nowhere.body}`).toBe(404);
      }
      // Over the socket too.
      const raw = await sendRaw(port, 'PUT /api/v1/account HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n');
      expectEnvelope(raw, 'METHOD_NOT_ALLOWED');
      expect(raw.headers.allow).toBe('GET, HEAD');
    });
  });

  describe('bodies', () => {
    const deep = `${'['.repeat(5000)}${']'.repeat(5000)}`;
    const deepObject = `${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`;

    it('refuses a body sent to an operation that takes none, however deep (never a 500); nothing or {} is no body', async () => {
      const machineId = randomUUID();
      for (const [url, status] of [
        [`/api/v1/hosts/machines/${machineId}/nettest`, 404],
        ['/api/v1/account/deletion-request', 202],
        ['/api/v1/hosts/enrollment-tokens', 201],
      ] as const) {
        const post = (payload: string) =>
          t.app.inject({
            method: 'POST',
            url,
            // The session: a step-up counts there (a person's key takes none), and the deletion request needs one.
            headers: { ...bearer(host.sessionToken), 'idempotency-key': randomUUID(), 'content-type': 'application/json' },
            payload,
          });
        for (const [payload, code] of [
          [deep, 'VALIDATION_FAILED'],
          [deepObject, 'VALIDATION_FAILED'],
          ['{"a":1}', 'UNSUPPORTED_MEDIA_TYPE'],
          ['[]', 'UNSUPPORTED_MEDIA_TYPE'],
          ['{not json', 'MALFORMED_JSON'],
        ] as const) {
          const res = await post(payload);
          expectEnvelope({ status: res.statusCode, headers: res.headers as Record<string, string>, body: res.body }, code);
        }
        for (const payload of ['', '{}', ' { } ']) {
          const empty = await post(payload);
          expect(empty.statusCode, `${url}: ${empty.body}`).toBe(status);
        }
      }
    });

    it(`refuses a body nested deeper than ${JSON_BODY_MAX_DEPTH} levels 422 before parsing it`, async () => {
      for (const payload of [deep, deepObject, `{"manifest":${'['.repeat(JSON_BODY_MAX_DEPTH)}${']'.repeat(JSON_BODY_MAX_DEPTH)}}`]) {
        const res = await t.app.inject({
          method: 'POST',
          url: '/api/v1/hosts/pairings',
          headers: { 'content-type': 'application/json' },
          payload,
        });
        const id = expectEnvelope(
          { status: res.statusCode, headers: res.headers as Record<string, string>, body: res.body },
          'VALIDATION_FAILED',
        );
        expect(id).toMatch(UUID);
        expect(res.json().error.message).toContain(`${JSON_BODY_MAX_DEPTH} levels`);
      }
    });

    it('still refuses prototype poisoning in a body', async () => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/v1/hosts/pairings',
        headers: { 'content-type': 'application/json' },
        payload: '{"manifest":{"__proto__":{"polluted":true}}}',
      });
      expect(res.statusCode).toBe(422);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    });
  });
});
