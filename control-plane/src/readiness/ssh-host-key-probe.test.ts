// The readiness verifier's SSH probe against real sockets: an ssh2 server with its own host key (as the agent's job
// listener), a port nothing listens on, and a listener that accepts but never speaks SSH.
import { generateKeyPairSync } from 'node:crypto';
import { createServer, type Socket } from 'node:net';
import ssh2 from 'ssh2';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../clock.js';
import { ReadinessProbeError } from '../services/jobs/readiness-probes.js';
import { Ssh2HostKeyProbe, sshFingerprintOf } from './ssh-host-key-probe.js';

const { Server, utils } = ssh2;

const limits = { connectTimeoutMs: 2_000, handshakeTimeoutMs: 300 };
const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

function listen(server: {
  listen(port: number, host: string, cb: () => void): unknown;
  address(): unknown;
  close(cb: () => void): unknown;
}) {
  return new Promise<number>((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      closers.push(() => new Promise<void>((done) => server.close(() => done())));
      resolve((server.address() as { port: number }).port);
    });
  });
}

describe('the SSH host-key probe', () => {
  it("answers the host key's fingerprint in the agent's format, and ends before authentication", async () => {
    const privateKey = generateKeyPairSync('ec', { namedCurve: 'prime256v1' })
      .privateKey.export({ type: 'sec1', format: 'pem' })
      .toString();
    const parsed = utils.parseKey(privateKey);
    if (parsed instanceof Error) throw parsed;
    const expected = sshFingerprintOf(parsed.getPublicSSH());
    expect(expected).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
    const authAttempts: string[] = [];
    const server = new Server({ hostKeys: [privateKey] }, (client) => {
      client.on('authentication', (ctx) => {
        authAttempts.push(ctx.method);
        ctx.reject();
      });
      client.on('error', () => {});
    });
    const port = await listen(server);
    const before = Date.now();
    const key = await new Ssh2HostKeyProbe(systemClock, limits).hostKeyAt({ host: '127.0.0.1', port });
    expect(key.fingerprint).toBe(expected);
    expect(key.seenAt.getTime()).toBeGreaterThanOrEqual(before);
    expect(key.seenAt.getTime()).toBeLessThanOrEqual(Date.now());
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(authAttempts).toEqual([]);
  });

  it('refuses an endpoint nothing listens on, saying so', async () => {
    const probe = createServer();
    const port = await listen(probe);
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    closers.pop();
    const failure = await new Ssh2HostKeyProbe(systemClock, limits).hostKeyAt({ host: '127.0.0.1', port }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ReadinessProbeError);
    expect((failure as Error).message).toBe(`could not connect to the SSH endpoint 127.0.0.1:${port}: ECONNREFUSED`);
  });

  it('gives up on a listener that never completes a handshake, within its timeout', async () => {
    const accepted: Socket[] = [];
    const silent = createServer((socket) => void accepted.push(socket));
    const port = await listen(silent);
    const started = Date.now();
    const failure = await new Ssh2HostKeyProbe(systemClock, limits).hostKeyAt({ host: '127.0.0.1', port }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ReadinessProbeError);
    expect((failure as Error).message).toBe(`no SSH handshake completed with 127.0.0.1:${port} within 300 ms`);
    expect(Date.now() - started).toBeLessThan(2_000);
    for (const socket of accepted) socket.destroy();
  });
});
