// `ark-agent selftest` as a host runs it, for the self-test's e2e suite and bench: a paired state directory (the
// machine's key in identity.json, as `ark-agent pair` writes it) and the installed entry point as a process. Also a
// real marketplace around one really paired machine, and the console's pages as a signed-in person reads them.
import { execFile } from 'node:child_process';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { arkConfigDir } from './cli-helpers.js';
import { renterKey } from './deposit-helpers.js';
import {
  type AgentSetup,
  agentBin,
  agentSetup,
  type ControlPlane,
  hostSession,
  pairAgent,
  repoRoot,
  startControlPlane,
} from './host-side-helpers.js';

/** The password `renterKey` (deposit-helpers.ts) gives the renter it creates. */
const RENTER_PASSWORD = 'correct horse battery staple';

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

/** A real marketplace for one machine: the control plane bundle, a host and a renter, and the machine paired. */
export interface PairedMarketplace {
  cp: ControlPlane;
  /** The paired agent's state (its identity.json) and config, ready for `ark-agent run`. */
  setup: AgentSetup;
  machineId: string;
  renterEmail: string;
  renterPassword: string;
  /** The `ark` CLI's environment as the renter (an API key, a fresh config directory). */
  renterEnv: NodeJS.ProcessEnv;
  stop(): Promise<void>;
}

/**
 * `ark-cp serve` asking each machine for its self-test with `benchmarkImage` (ARK_SELFTEST_IMAGE, asked within 200 ms
 * of enrollment), and a machine paired with the real `ark-agent pair` whose jobs and self-tests run on `dockerSocket`.
 * The agent is not started: the caller runs `ark-agent run` when its self-test may have the engine to itself.
 */
export async function pairedMarketplace(benchmarkImage: string, dockerSocket: string): Promise<PairedMarketplace> {
  const cp = await startControlPlane({
    env: { ARK_HEARTBEAT_INTERVAL_S: '1', ARK_SELFTEST_IMAGE: benchmarkImage, ARK_SELFTEST_WORKER_INTERVAL_MS: '200' },
  });
  const setup = agentSetup(
    {
      heartbeat_interval_s: 1,
      min_disk_free_bytes: 0,
      docker_socket_path: dockerSocket,
      // No GPU here: the CPU path of the same benchmark.
      nvidia_smi_path: '/nonexistent/nvidia-smi',
    },
    { ARK_AGENT_LOG_LEVEL: 'info' },
  );
  const stop = async () => {
    await cp.process.stop('SIGTERM');
    await rm(cp.dataDir, { recursive: true, force: true });
    await rm(dirname(setup.stateDir), { recursive: true, force: true });
  };
  try {
    const renterEmail = `renter-${randomUUID().slice(0, 8)}@example.test`;
    const [hostToken, renterApiKey] = await Promise.all([hostSession(cp), renterKey(cp, renterEmail)]);
    const { machineId } = await pairAgent(cp, hostToken, setup);
    return {
      cp,
      setup,
      machineId,
      renterEmail,
      renterPassword: RENTER_PASSWORD,
      renterEnv: { ARK_URL: cp.base, ARK_API_KEY: renterApiKey, ARK_CONFIG_DIR: arkConfigDir() },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** A console page's HTML for a person signed in through the console's own sign-in form (its CSRF token and cookies). */
export async function consolePage(base: string, email: string, password: string, path: string): Promise<string> {
  const jar = new Map<string, string>();
  const keep = (response: Response) => {
    for (const line of response.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const at = pair.indexOf('=');
      jar.set(pair.slice(0, at), pair.slice(at + 1));
    }
  };
  const cookie = () => [...jar].map(([name, value]) => `${name}=${value}`).join('; ');
  const form = await fetch(`${base}/console/login`, { redirect: 'manual' });
  keep(form);
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1];
  if (csrf === undefined) throw new Error('no CSRF token on the sign-in form');
  const signIn = await fetch(`${base}/console/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: cookie(), 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: csrf, email, password }).toString(),
  });
  if (signIn.status !== 303) throw new Error(`console sign-in answered ${signIn.status}: ${await signIn.text()}`);
  keep(signIn);
  const answer = await fetch(`${base}${path}`, { redirect: 'manual', headers: { cookie: cookie() } });
  if (answer.status !== 200) throw new Error(`${path} answered ${answer.status}`);
  return answer.text();
}
