// A load balancer's connections over real sockets (issue 26): from a peer in the list the PROXY header's client is
// the connection's address for Node's parser, upgrades and the per-address bound; a connection without a good header
// is closed; every other peer is handed on untouched, its bytes never read as a header. Loopback only: the balancer
// is 127.0.0.2, a direct client 127.0.0.1, and 203.0.113.x appear only inside headers.
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { boundConnectionsPerAddress } from './edge.js';
import { acceptProxiedConnections, peerMatcher, type ProxyHeaderRefusal } from './proxied-connections.js';

const SIGNATURE = [0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a];
const v2 = (source: number[], port: number) =>
  Buffer.from([...SIGNATURE, 0x21, 0x11, 0, 12, ...source, 10, 0, 0, 1, port >> 8, port & 0xff, 0x1f, 0x90]);
const V2_LOCAL = Buffer.from([...SIGNATURE, 0x20, 0x00, 0, 0]);
const v1 = (source: string, port = 40000) => `PROXY TCP4 ${source} 198.51.100.1 ${port} 8080\r\n`;
const get = (path: string, close = true) => `GET ${path} HTTP/1.1\r\nHost: x\r\n${close ? 'Connection: close\r\n' : ''}\r\n`;

let server: Server;
let port: number;
const refusals: ProxyHeaderRefusal[] = [];

/** Connects from `from`, writes each chunk in turn (a pause between, so each is its own TCP segment) and reads to the close. */
function exchange(chunks: Array<string | Buffer>, from = '127.0.0.2'): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1', localAddress: from });
    let answer = '';
    socket.on('data', (data) => {
      answer += data.toString('latin1');
    });
    socket.on('error', () => {});
    socket.on('close', () => resolve(answer));
    void (async () => {
      for (const chunk of chunks) {
        if (socket.destroyed) return;
        socket.write(chunk);
        await new Promise((r) => setTimeout(r, 15));
      }
    })();
  });
}

/** Opens a connection and resolves once its first answer arrives (the connection stays open). */
function hold(chunks: Array<string | Buffer>): Promise<{ first: string; close: () => void }> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1', localAddress: '127.0.0.2' });
    socket.on('error', () => {});
    socket.once('data', (data) => resolve({ first: data.toString('latin1'), close: () => socket.destroy() }));
    socket.once('close', () => resolve({ first: '', close: () => {} }));
    socket.write(Buffer.concat(chunks.map((chunk) => Buffer.from(chunk))));
  });
}

const bodyOf = (answer: string) => answer.slice(answer.indexOf('\r\n\r\n') + 4);

beforeAll(async () => {
  server = createServer((request, response) => {
    response.end(`${request.socket.remoteAddress} ${request.socket.remotePort} ${request.socket.remoteFamily} ${request.url}`);
  });
  server.on('upgrade', (request, socket) => {
    socket.end(`HTTP/1.1 101 Switching Protocols\r\n\r\nupgraded for ${request.socket.remoteAddress}`);
  });
  boundConnectionsPerAddress(server, { maxConnectionsPerAddress: 2, headers: {} });
  acceptProxiedConnections(server, { from: ['127.0.0.2'], headerTimeoutMs: 300, onRefused: (refusal) => refusals.push(refusal) });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as { port: number }).port;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('connections from a PROXY protocol peer', () => {
  it('carry the v1 or v2 header’s client address, whether the header comes whole, split or with the request', async () => {
    expect(bodyOf(await exchange([v1('203.0.113.7') + get('/v1')]))).toBe('203.0.113.7 40000 IPv4 /v1');
    expect(bodyOf(await exchange(['PROX', 'Y TCP4 203.0.113.7 198.51.100.1 40001 8080\r', '\n', get('/v1-split')]))).toBe(
      '203.0.113.7 40001 IPv4 /v1-split',
    );
    const header = v2([203, 0, 113, 8], 51234);
    expect(bodyOf(await exchange([Buffer.concat([header, Buffer.from(get('/v2'))])]))).toBe('203.0.113.8 51234 IPv4 /v2');
    expect(bodyOf(await exchange([header.subarray(0, 7), header.subarray(7, 20), header.subarray(20), get('/v2-split')]))).toBe(
      '203.0.113.8 51234 IPv4 /v2-split',
    );
  });

  it('keep every request of the connection after the header (pipelined ones too)', async () => {
    const answer = await exchange([v1('203.0.113.9') + get('/a', false) + get('/b')]);
    expect(answer).toContain('203.0.113.9 40000 IPv4 /a');
    expect(answer).toContain('203.0.113.9 40000 IPv4 /b');
  });

  it('keep the balancer’s own address for a LOCAL or UNKNOWN header (health checks)', async () => {
    expect(bodyOf(await exchange([Buffer.concat([V2_LOCAL, Buffer.from(get('/check'))])]))).toMatch(/^127\.0\.0\.2 \d+ IPv4 \/check$/);
    expect(bodyOf(await exchange(['PROXY UNKNOWN\r\n', get('/unknown')]))).toMatch(/^127\.0\.0\.2 \d+ IPv4 \/unknown$/);
  });

  it('upgrade with the header’s address', async () => {
    const answer = await exchange([
      `${v1('203.0.113.10')}GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n`,
    ]);
    expect(answer).toBe('HTTP/1.1 101 Switching Protocols\r\n\r\nupgraded for 203.0.113.10');
  });

  it('are bounded per header address, not per balancer', async () => {
    const a = [await hold([v1('203.0.113.20'), get('/1', false)]), await hold([v1('203.0.113.20'), get('/2', false)])];
    expect(a.map((held) => bodyOf(held.first))).toEqual(['203.0.113.20 40000 IPv4 /1', '203.0.113.20 40000 IPv4 /2']);
    const third = await exchange([v1('203.0.113.20') + get('/3')]);
    expect(third).toMatch(/^HTTP\/1\.1 429 /);
    expect(bodyOf(await exchange([v1('203.0.113.21') + get('/other')]))).toBe('203.0.113.21 40000 IPv4 /other');
    for (const held of a) held.close();
  });

  it('are closed without an answer when the header is missing, broken, or late', async () => {
    refusals.length = 0;
    expect(await exchange([get('/no-header')])).toBe('');
    expect(await exchange(['PROXY TCP4 203.0.113.7 198.51.100.1 99999 8080\r\n' + get('/bad-port')])).toBe('');
    expect(await exchange([Buffer.from([...SIGNATURE, 0x21, 0x11, 0, 4, 1, 2, 3, 4]), get('/short')])).toBe('');
    // Nothing sent: the header timeout closes it.
    expect(await exchange([])).toBe('');
    expect(refusals).toEqual(['invalid', 'invalid', 'invalid', 'timeout']);
  });
});

describe('connections from any other peer', () => {
  it('are handed on untouched: a PROXY header from them is just a malformed request', async () => {
    expect(bodyOf(await exchange([get('/direct')], '127.0.0.1'))).toMatch(/^127\.0\.0\.1 \d+ IPv4 \/direct$/);
    expect(await exchange([v1('203.0.113.7') + get('/spoof')], '127.0.0.1')).toMatch(/^HTTP\/1\.1 400 /);
  });
});

describe('peerMatcher', () => {
  it('matches addresses and CIDRs of both families, IPv4-mapped IPv6 as IPv4', () => {
    const matches = peerMatcher(['198.51.100.5', '203.0.113.0/24', '2001:db8::/32']);
    expect(['198.51.100.5', '203.0.113.4', '::ffff:198.51.100.5', '2001:db8:12::1'].map(matches)).toEqual([true, true, true, true]);
    expect(['198.51.100.6', '203.0.114.1', '2001:db9::1', undefined].map(matches)).toEqual([false, false, false, false]);
    expect(peerMatcher([])('127.0.0.1')).toBe(false);
  });
});
