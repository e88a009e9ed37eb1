// An SSH endpoint as a job's access gives one: an ssh2 server on a loopback port with its own host key, accepting no
// one. Suites whose agent speaks the channel by hand (RawAgent) report it in their `ready` status, so the control
// plane's readiness verification (an SSH handshake and the host key's fingerprint) passes on a real endpoint.
import { createHash, generateKeyPairSync } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import ssh2 from 'ssh2';

export interface SshEndpoint {
  host: string;
  port: number;
  /** `SHA256:<base64, unpadded>` of the host key, as the agent reports it. */
  fingerprint: string;
  close(): Promise<void>;
}

/** `unref`: the listener never keeps the test process alive (for suites that start one per job and never close it). */
export async function startSshEndpoint(options: { unref?: boolean } = {}): Promise<SshEndpoint> {
  const privateKey = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({ type: 'sec1', format: 'pem' }).toString();
  const parsed = ssh2.utils.parseKey(privateKey);
  if (parsed instanceof Error) throw parsed;
  const fingerprint = `SHA256:${createHash('sha256').update(parsed.getPublicSSH()).digest('base64').replace(/=+$/, '')}`;
  const server = new ssh2.Server({ hostKeys: [privateKey] }, (client) => {
    client.on('authentication', (ctx) => ctx.reject());
    client.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  if (options.unref) server.unref();
  const port = (server.address() as AddressInfo).port;
  return {
    host: '127.0.0.1',
    port,
    fingerprint,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
