// Security headers on every answer and a strict content security policy on every HTML page (issue 7, item 8),
// and /metrics: unchanged by default, behind a bearer token, or on a second listener (then not on the API's).
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../clock.js';
import { bearer, createTestApp, type TestApp } from '../testing/app.js';
import { sendRaw } from '../testing/raw-http.js';
import { bearerMatches, startMetricsListener } from './metrics.js';
import { htmlPagePolicy, securityHeaders } from './security-headers.js';

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;
const directives = (policy: string) =>
  new Map(
    policy.split(';').map((part) => {
      const [name = '', ...values] = part.trim().split(/\s+/);
      return [name, values] as const;
    }),
  );

describe('security headers', () => {
  it('send HSTS only when the public URL is https', () => {
    expect(securityHeaders('https://ark.example.test')['strict-transport-security']).toBe('max-age=31536000; includeSubDomains');
    expect(securityHeaders('http://127.0.0.1:8080')['strict-transport-security']).toBeUndefined();
    expect(securityHeaders('http://127.0.0.1:8080')).toMatchObject({
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
    });
  });

  it("allow a page's own inline script and style by hash, and nothing else", () => {
    const policy = directives(htmlPagePolicy('<html><style>p{}</style><script>go()</script><script type="module">x()</script></html>'));
    expect(policy.get('default-src')).toEqual(["'none'"]);
    expect(policy.get('script-src')).toEqual([sha256('go()'), sha256('x()')]);
    expect(policy.get('style-src')).toEqual([sha256('p{}')]);
    expect(policy.get('frame-ancestors')).toEqual(["'none'"]);
    expect(policy.get('connect-src')).toEqual(["'self'"]);
    expect(directives(htmlPagePolicy('<p>plain</p>')).get('script-src')).toEqual(["'none'"]);
  });
});

describe('security headers on the app', () => {
  let t: TestApp<ManualClock>;
  const metricsToken = randomBytes(24).toString('base64url');
  beforeAll(async () => {
    t = await createTestApp('sqlite', { configOverrides: { publicBaseUrl: 'https://ark.example.test', metricsToken } });
  });
  afterAll(async () => {
    await t?.destroy();
  });

  it('are on every API answer: success, error, unknown route, wrong method, malformed URL', async () => {
    for (const [method, url] of [
      ['GET', '/healthz'],
      ['GET', '/api/v1/templates'],
      ['GET', '/api/v1/account'],
      ['GET', '/api/v1/nothing'],
      ['PUT', '/api/v1/account'],
      ['GET', '/api/v1/templates/%E0%A4%A'],
      ['GET', `/api/v1/jobs/${'a'.repeat(500)}`],
    ] as const) {
      const res = await t.app.inject({ method, url });
      expect(res.headers['x-content-type-options'], url).toBe('nosniff');
      expect(res.headers['referrer-policy'], url).toBe('no-referrer');
      expect(res.headers['strict-transport-security'], url).toBe('max-age=31536000; includeSubDomains');
      expect(res.headers['content-security-policy'], url).toBe("default-src 'none'; frame-ancestors 'none'");
    }
  });

  it("give an HTML page of its own a strict policy: its own script and style by hash, no 'unsafe-inline'", async () => {
    const page = '<!doctype html><style>body{margin:0}</style><p>hello</p><script>document.title = "x";</script>';
    const policy = htmlPagePolicy(page);
    expect(policy).not.toContain('unsafe');
    expect(directives(policy).get('script-src')).toEqual([sha256('document.title = "x";')]);
    expect(directives(policy).get('style-src')).toEqual([sha256('body{margin:0}')]);
    expect(directives(policy).get('frame-ancestors')).toEqual(["'none'"]);
    // The paths a person types (/, /pair) lead into the console and carry the same headers as any answer.
    const pair = await t.app.inject({ method: 'GET', url: '/pair?code=ABCD-EFGH' });
    expect(pair.statusCode).toBe(302);
    expect(pair.headers['x-content-type-options']).toBe('nosniff');
  });

  it('require the metrics token as a bearer when one is configured, compared in constant time', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/metrics' })).json().error.code).toBe('UNAUTHENTICATED');
    const wrong = await t.app.inject({ method: 'GET', url: '/metrics', headers: bearer(`${metricsToken}x`) });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json().error.request_id).toBe(wrong.headers['x-request-id']);
    const right = await t.app.inject({ method: 'GET', url: '/metrics', headers: bearer(metricsToken) });
    expect(right.statusCode).toBe(200);
    expect(right.body).toContain('ark_http_requests_total');
    expect(bearerMatches(`Bearer ${metricsToken}`, metricsToken)).toBe(true);
    expect(bearerMatches(undefined, metricsToken)).toBe(false);
    expect(bearerMatches(metricsToken, metricsToken)).toBe(false);
  });
});

describe('/metrics on its own listener', () => {
  let t: TestApp<ManualClock>;
  let listener: Awaited<ReturnType<typeof startMetricsListener>>;
  beforeAll(async () => {
    t = await createTestApp('sqlite', { configOverrides: { metricsPort: 0 } });
    listener = await startMetricsListener(t.ctx.metrics, { host: '127.0.0.1', port: 0, token: null, publicBaseUrl: 'http://127.0.0.1' });
  });
  afterAll(async () => {
    await listener?.close();
    await t?.destroy();
  });

  it('is served there, unchanged, and no longer on the API listener', async () => {
    await t.app.inject({ method: 'GET', url: '/healthz' });
    expect((await t.app.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(404);
    const port = Number(new URL(listener.address).port);
    const metrics = await sendRaw(port, 'GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(metrics.status).toBe(200);
    expect(metrics.headers['content-type']).toMatch(/^text\/plain/);
    expect(metrics.body).toContain('ark_http_requests_total{method="GET",route="/healthz",status="200"}');
    const other = await sendRaw(port, 'GET /api/v1/account HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(other.status).toBe(404);
    expect(JSON.parse(other.body).error.request_id).toBe(other.headers['x-request-id']);
    const malformed = await sendRaw(port, 'GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n');
    expect(malformed.status).toBe(400);
    expect(JSON.parse(malformed.body).error.code).toBe('MALFORMED_REQUEST');
  });
});
