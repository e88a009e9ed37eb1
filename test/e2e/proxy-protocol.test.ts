// The client address behind a load balancer (issue 26), on a real `ark-cp serve`: a connection from a peer in
// ARK_PROXY_PROTOCOL_FROM (127.0.0.2 here) carries the client's address in a PROXY header (v1 or v2), and that
// address is the one the per-address connection bound, the rate limits and the request log see; agent channels leave
// the bound once upgraded; a balancer connection without a good header is closed, and a PROXY header from anyone
// else is a malformed request. Then a real HAProxy with send-proxy-v2 and http-reuse never (deploy/cluster/haproxy.cfg:
// each replica connection stays with the client connection it serves) in front, the bound held and given back, and
// X-Forwarded-For believed from ARK_TRUSTED_PROXIES (127.0.0.3) only. Traffic stays on loopback: 203.0.113.x (a
// documentation range) appears only inside headers.
import { randomBytes, randomUUID } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, type SpawnedProcess, spawnProcess, waitFor } from '../harness/processes.js';
import { type ControlPlane, repoRoot, startControlPlane } from './host-side-helpers.js';

const BALANCER = '127.0.0.2';
const TRUSTED_PROXY = '127.0.0.3';
const BOUND = 4;

const SIGNATURE = [0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a];
/** A PROXY v2 header (TCP4) naming `source` as the client. */
const v2 = (source: string, port = 50000) =>
  Buffer.from([...SIGNATURE, 0x21, 0x11, 0, 12, ...source.split('.').map(Number), 127, 0, 0, 1, port >> 8, port & 0xff, 0, 80]);
/** A PROXY v1 line naming `source` as the client. */
const v1 = (source: string, port = 50000) => Buffer.from(`PROXY TCP4 ${source} 127.0.0.1 ${port} 80\r\n`);

let cp: ControlPlane;

interface Answer {
  status: number | null;
  body: string;
  raw: string;
}

function parse(raw: string): Answer {
  const status = /^HTTP\/1\.1 (\d{3}) /.exec(raw);
  return { status: status ? Number(status[1]) : null, body: raw.slice(raw.indexOf('\r\n\r\n') + 4), raw };
}

function request(
  method: string,
  path: string,
  options: { body?: unknown; headers?: Record<string, string>; close?: boolean } = {},
): string {
  const body = options.body === undefined ? '' : JSON.stringify(options.body);
  const headers = {
    host: '127.0.0.1',
    ...(options.close === false ? {} : { connection: 'close' }),
    ...(body ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } : {}),
    ...options.headers,
  };
  return `${method} ${path} HTTP/1.1\r\n${Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}`)
    .join('\r\n')}\r\n\r\n${body}`;
}

/** One connection from `from` to `port`: writes `bytes`, reads until the server closes it. */
function exchange(bytes: Buffer | string, from: string, port = cp.port): Promise<Answer> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, localAddress: from });
    let raw = '';
    socket.on('data', (data) => {
      raw += data.toString('latin1');
    });
    socket.on('error', () => {});
    socket.on('close', () => resolve(parse(raw)));
    socket.write(bytes);
  });
}

/** A connection that stays open: resolves with its first answer (or the close, for a refused one). */
function hold(bytes: Buffer | string, from: string, port = cp.port): Promise<{ answer: Answer; socket: Socket }> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port, localAddress: from });
    let raw = '';
    socket.on('error', () => {});
    socket.on('data', (data) => {
      raw += data.toString('latin1');
      if (raw.includes('\r\n\r\n')) resolve({ answer: parse(raw), socket });
    });
    socket.on('close', () => resolve({ answer: parse(raw), socket }));
    socket.write(bytes);
  });
}

const keepAlive = () => request('GET', '/healthz', { close: false });
const channelUpgrade = () =>
  request('GET', '/api/v1/agents/channel?v=1', {
    close: false,
    headers: {
      connection: 'Upgrade',
      upgrade: 'websocket',
      'sec-websocket-version': '13',
      'sec-websocket-key': randomBytes(16).toString('base64'),
    },
  });

/** The request lines the control plane logged for `path` (JSON, one object per line). */
function loggedRequests(path: string): Array<{ req: { url: string; remoteAddress: string } }> {
  return cp.process
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{') && line.includes(path))
    .map((line) => JSON.parse(line))
    .filter((entry) => entry.msg === 'request completed' && entry.req?.url === path);
}

async function loggedAddress(path: string): Promise<string> {
  const [entry] = await waitFor(() => (loggedRequests(path).length > 0 ? loggedRequests(path) : null), {
    timeoutMs: 5000,
    description: `the request line of ${path}`,
  });
  return entry?.req.remoteAddress ?? '';
}

const closeAll = (held: Array<{ socket: Socket }>) => {
  for (const { socket } of held) socket.destroy();
};

beforeAll(async () => {
  cp = await startControlPlane({
    env: {
      LOG_LEVEL: 'info',
      ARK_LOG_FORMAT: 'json',
      ARK_PROXY_PROTOCOL_FROM: `${BALANCER}, 198.51.100.0/24`,
      ARK_TRUSTED_PROXIES: TRUSTED_PROXY,
      ARK_HTTP_MAX_CONNECTIONS_PER_ADDRESS: String(BOUND),
      ARK_AUTH_ATTEMPTS_PER_MIN: '2',
    },
  });
});

afterAll(async () => {
  await cp?.process.stop('SIGTERM');
});

describe('a control plane behind a PROXY protocol balancer', () => {
  it('bounds connections per header address, v1 and v2 alike, not per balancer', async () => {
    const held = await Promise.all(
      [v2, v1, v2, v1].map((header) => hold(Buffer.concat([header('203.0.113.7'), Buffer.from(keepAlive())]), BALANCER)),
    );
    expect(held.map(({ answer }) => answer.status)).toEqual([200, 200, 200, 200]);
    const fifth = await exchange(Buffer.concat([v2('203.0.113.7'), Buffer.from(request('GET', '/healthz'))]), BALANCER);
    expect(fifth.status).toBe(429);
    expect(JSON.parse(fifth.body).error.code).toBe('UNAVAILABLE');
    // Another client behind the same balancer, and a direct client, are not held back.
    expect((await exchange(Buffer.concat([v1('203.0.113.8'), Buffer.from(request('GET', '/healthz'))]), BALANCER)).status).toBe(200);
    expect((await exchange(request('GET', '/healthz'), '127.0.0.1')).status).toBe(200);
    closeAll(held);
  });

  it('logs and rate-limits by the header address', async () => {
    const path = `/api/v1/nothing-here-${randomUUID()}`;
    await exchange(Buffer.concat([v2('203.0.113.9'), Buffer.from(request('GET', path))]), BALANCER);
    expect(await loggedAddress(path)).toBe('203.0.113.9');
    // Sign-in attempts are limited per source address (2 a minute here); each email differs, so only the address counts.
    const signIn = (header: Buffer) =>
      exchange(
        Buffer.concat([
          header,
          Buffer.from(
            request('POST', '/api/v1/auth/sessions', {
              body: { email: `nobody-${randomUUID()}@example.test`, password: 'not the password' },
            }),
          ),
        ]),
        BALANCER,
      );
    // The limit counts per clock minute: start the three attempts well inside one, or they could straddle two.
    const intoMinuteMs = Date.now() % 60_000;
    if (intoMinuteMs > 50_000) await new Promise((resolve) => setTimeout(resolve, 60_500 - intoMinuteMs));
    const fromA = [await signIn(v2('203.0.113.10')), await signIn(v1('203.0.113.10')), await signIn(v2('203.0.113.10'))];
    expect(fromA.map((answer) => answer.status)).toEqual([401, 401, 429]);
    expect((await signIn(v1('203.0.113.11'))).status).toBe(401);
  });

  it('lets agent channels leave the bound once upgraded', async () => {
    const channels = await Promise.all(
      Array.from({ length: BOUND + 2 }, () => hold(Buffer.concat([v2('203.0.113.12'), Buffer.from(channelUpgrade())]), BALANCER)),
    );
    expect(channels.map(({ answer }) => answer.status)).toEqual(Array(BOUND + 2).fill(101));
    // The channels hold none of the address's slots: its ordinary connections still get the whole bound.
    const held = await Promise.all(
      Array.from({ length: BOUND }, () => hold(Buffer.concat([v1('203.0.113.12'), Buffer.from(keepAlive())]), BALANCER)),
    );
    expect(held.map(({ answer }) => answer.status)).toEqual(Array(BOUND).fill(200));
    expect((await exchange(Buffer.concat([v1('203.0.113.12'), Buffer.from(request('GET', '/healthz'))]), BALANCER)).status).toBe(429);
    closeAll([...channels, ...held]);
  });

  it('closes a balancer connection without a good header, and reads no header from anyone else', async () => {
    expect(await exchange(request('GET', '/healthz'), BALANCER)).toEqual({ status: null, body: '', raw: '' });
    expect((await exchange('PROXY TCP4 203.0.113.7 127.0.0.1 99999 80\r\n', BALANCER)).raw).toBe('');
    expect((await exchange(Buffer.from([0x16, 0x03, 0x01, 0x00, 0x05, 1, 2, 3, 4, 5]), BALANCER)).raw).toBe('');
    // From 127.0.0.1 (not in the list) the header is no header: Node's parser refuses the line, with the envelope.
    const spoofed = await exchange(Buffer.concat([v1('203.0.113.7'), Buffer.from(request('GET', '/healthz'))]), '127.0.0.1');
    expect(spoofed.status).toBe(400);
    expect(JSON.parse(spoofed.body).error.code).toBe('MALFORMED_REQUEST');
    const metrics = await fetch(`${cp.base}/metrics`).then((response) => response.text());
    expect(metrics).toMatch(/ark_http_proxy_header_refusals_total\{reason="invalid"\} [3-9]/);
  });

  it('believes X-Forwarded-For from ARK_TRUSTED_PROXIES only', async () => {
    const trusted = `/api/v1/forwarded-${randomUUID()}`;
    await exchange(request('GET', trusted, { headers: { 'x-forwarded-for': '198.51.100.1, 203.0.113.20' } }), TRUSTED_PROXY);
    expect(await loggedAddress(trusted)).toBe('203.0.113.20');
    const untrusted = `/api/v1/forwarded-${randomUUID()}`;
    await exchange(request('GET', untrusted, { headers: { 'x-forwarded-for': '203.0.113.21' } }), '127.0.0.1');
    expect(await loggedAddress(untrusted)).toBe('127.0.0.1');
  });
});

describe('HAProxy with send-proxy-v2 in front (deploy/cluster/haproxy.cfg)', () => {
  let haproxy: SpawnedProcess | undefined;
  let lbPort: number;

  beforeAll(async () => {
    lbPort = await freePort();
    const replica = `127.0.0.1:${cp.port}`;
    haproxy = spawnProcess('haproxy', ['-db', '-f', join(repoRoot, 'deploy', 'cluster', 'haproxy.cfg')], {
      env: { ARK_LB_BIND: `127.0.0.1:${lbPort}`, ARK_LB_SOURCE: BALANCER, ARK_CP1: replica, ARK_CP2: replica, ARK_CP3: replica },
    });
    await waitFor(
      async () => {
        if (!haproxy?.isRunning()) throw new Error(`haproxy exited:\n${haproxy?.output()}`);
        return (await fetch(`http://127.0.0.1:${lbPort}/readyz`)).ok;
      },
      { timeoutMs: 15_000, description: 'HAProxy to answer /readyz' },
    );
  });

  afterAll(async () => {
    await haproxy?.stop('SIGTERM');
  });

  it('hands the replica the client address, and the bound holds through it', async () => {
    const path = `/api/v1/through-haproxy-${randomUUID()}`;
    expect((await exchange(request('GET', path), '127.0.0.5', lbPort)).status).toBe(404);
    expect(await loggedAddress(path)).toBe('127.0.0.5');
    // The health checks carry a LOCAL header: they keep HAProxy's own address.
    expect(loggedRequests('/readyz').some((entry) => entry.req.remoteAddress === BALANCER)).toBe(true);

    const held = await Promise.all(Array.from({ length: BOUND }, () => hold(keepAlive(), '127.0.0.6', lbPort)));
    expect(held.map(({ answer }) => answer.status)).toEqual(Array(BOUND).fill(200));
    const over = await exchange(request('GET', '/healthz'), '127.0.0.6', lbPort);
    expect(over.status).toBe(429);
    // Another client of the same HAProxy is not held back.
    expect((await exchange(request('GET', '/healthz'), '127.0.0.7', lbPort)).status).toBe(200);
    // The client's slots go with its connections: HAProxy closes their replica connections when they close.
    closeAll(held);
    await waitFor(async () => (await exchange(request('GET', '/healthz'), '127.0.0.6', lbPort)).status === 200, {
      timeoutMs: 5000,
      description: 'a new connection from 127.0.0.6 once its held ones closed',
    });
  });
});
