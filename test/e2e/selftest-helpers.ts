// `ark-agent selftest` as a host runs it, for the self-test's e2e suite and bench: a paired state directory (the
// machine's key in identity.json, as `ark-agent pair` writes it) and the installed entry point as a process.
import { execFile } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentBin, repoRoot } from './host-side-helpers.js';

export type Run = { code: number; stdout: string; stderr: string; ms: number };

/** The agent's CLI as a host runs it; resolves with its exit code whatever it is. */
export function agent(args: readonly string[], env: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<Run> {
  const started = performance.now();
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [agentBin, ...args],
      { cwd: repoRoot, env: { PATH: process.env.PATH, ...env }, timeout: timeoutMs, encoding: 'utf8', maxBuffer: 4 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
        resolve({ code, stdout, stderr, ms: performance.now() - started });
      },
    );
  });
}

/** A paired machine's identity.json, as `ark-agent pair` writes it: tweetnacl's 64-byte secret key (seed, public key). */
export async function pairedStateDir(
  machineId: string,
  channel?: { url: string; controlPlanePublicKey: string },
): Promise<{ stateDir: string; publicKey: string }> {
  const stateDir = await mkdtemp(join(tmpdir(), 'ark-selftest-state-'));
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(12);
  const seed = privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(16);
  const identity = {
    version: 1,
    machine_id: machineId,
    public_key: raw.toString('base64'),
    secret_key: Buffer.concat([seed, raw]).toString('base64'),
    control_plane_public_key: channel?.controlPlanePublicKey ?? raw.toString('base64'),
    channel_url: channel?.url ?? 'ws://127.0.0.1:9/agent',
    control_plane_url: 'http://127.0.0.1:9',
    enrolled_at: new Date().toISOString(),
  };
  await writeFile(join(stateDir, 'identity.json'), JSON.stringify(identity), { mode: 0o600 });
  return { stateDir, publicKey: identity.public_key };
}
