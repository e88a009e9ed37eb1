import { createHash } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import ssh2 from 'ssh2';
import type { Clock, ClockTimer } from '../clock.js';
import { endpointText } from '../domain/jobs/readiness.js';
import { ReadinessProbeError, type SshHostKeyProbe } from '../services/jobs/readiness-probes.js';

// The readiness verifier's SSH side (issue 24 item 1): connect to the job's endpoint as a renter would, run the SSH
// key exchange, and hang up. The server proves it holds the host key during the key exchange (it signs the exchange
// hash), before any authentication, so no credential is needed and none is offered: the connection is ended as soon
// as the handshake completes. Built once in runtime.ts; both deadlines run on the injected clock.

// ssh2 is CommonJS: plain Node (the bundled control plane) exposes only its default export to ESM.
const { Client } = ssh2;

/** `SHA256:<base64 without padding>` of an SSH public key blob: the agent's format (host-agent/src/access/host-key.ts). */
export function sshFingerprintOf(publicKeyBlob: Buffer): string {
  return `SHA256:${createHash('sha256').update(publicKeyBlob).digest('base64').replace(/=+$/, '')}`;
}

export interface SshProbeLimits {
  /** The TCP connect (ARK_READINESS_CONNECT_TIMEOUT_MS). */
  connectTimeoutMs: number;
  /** From connected to the key exchange done (ARK_READINESS_HANDSHAKE_TIMEOUT_MS). */
  handshakeTimeoutMs: number;
}

export class Ssh2HostKeyProbe implements SshHostKeyProbe {
  readonly #clock: Clock;
  readonly #limits: SshProbeLimits;

  constructor(clock: Clock, limits: SshProbeLimits) {
    this.#clock = clock;
    this.#limits = limits;
  }

  hostKeyAt(endpoint: { host: string; port: number }): Promise<{ fingerprint: string; seenAt: Date }> {
    const clock = this.#clock;
    const { connectTimeoutMs, handshakeTimeoutMs } = this.#limits;
    const where = endpointText(endpoint);
    return new Promise((resolve, reject) => {
      let settled = false;
      let timer: ClockTimer | null = null;
      let seen: { fingerprint: string; seenAt: Date } | null = null;
      const client = new Client();
      const socket: Socket = connect({ host: endpoint.host, port: endpoint.port });
      const deadline = (ms: number, what: string) => {
        if (timer !== null) clock.clearTimeout(timer);
        timer = clock.setTimeout(() => finish(new ReadinessProbeError(`${what} ${where} within ${ms} ms`)), ms);
        timer.unref();
      };
      const finish = (error: ReadinessProbeError | null) => {
        if (settled) return;
        settled = true;
        if (timer !== null) clock.clearTimeout(timer);
        client.removeAllListeners('handshake');
        // Nothing more is read or sent: the renter's session is not ours to open.
        client.on('error', () => {});
        client.end();
        socket.destroy();
        if (error !== null) reject(error);
        else if (seen !== null) resolve(seen);
        else reject(new ReadinessProbeError(`the SSH endpoint ${where} presented no host key`));
      };
      deadline(connectTimeoutMs, 'could not connect to the SSH endpoint');
      socket.once('error', (error: NodeJS.ErrnoException) =>
        finish(new ReadinessProbeError(`could not connect to the SSH endpoint ${where}: ${error.code ?? error.message}`)),
      );
      socket.once('connect', () => {
        deadline(handshakeTimeoutMs, 'no SSH handshake completed with');
        client.once('handshake', () => finish(null));
        client.on('error', (error: Error) => finish(new ReadinessProbeError(`the SSH handshake with ${where} failed: ${error.message}`)));
        client.connect({
          sock: socket,
          // Never sent: the connection ends after the key exchange, before the user-auth service is asked for.
          username: 'ark-readiness',
          // The deadlines above bound the wait, on the injected clock (ssh2's own timer is off).
          readyTimeout: 0,
          hostVerifier: (key: Buffer) => {
            seen = { fingerprint: sshFingerprintOf(key), seenAt: clock.now() };
            return true;
          },
        });
      });
    });
  }
}
