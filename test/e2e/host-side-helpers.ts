// Real processes for host-side end-to-end tests and benchmarks: a control plane (`ark-cp serve`), its CLI, and
// `ark-agent` through its installed entry point. Everything is driven through public faces: HTTP, the CLIs and
// their output, and `ark-agent status --json`.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, runCommand, type SpawnedProcess, spawnProcess, waitFor } from '../harness/processes.js';
import { controlPlaneBundle } from '../harness/bundles.js';

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
export const agentBin = join(repoRoot, 'host-agent', 'bin', 'ark-agent.mjs');
export const nvidiaSmiFixture = join(repoRoot, 'test', 'fixtures', 'nvidia-smi', 'l4-x2-driver-555.xml');

export interface ControlPlaneOptions {
  port?: number;
  dataDir?: string;
  databaseUrl?: string | null;
  env?: NodeJS.ProcessEnv;
}

export interface ControlPlane {
  base: string;
  port: number;
  dataDir: string;
  env: NodeJS.ProcessEnv;
  process: SpawnedProcess;
}

/** Environment of the control plane: loopback, its own data dir, quiet logs, Postgres when a URL is given. */
function controlPlaneEnv(
  port: number,
  dataDir: string,
  databaseUrl: string | null | undefined,
  extra: NodeJS.ProcessEnv = {},
): NodeJS.ProcessEnv {
  return {
    HOST: '127.0.0.1',
    PORT: String(port),
    ARK_DATA_DIR: dataDir,
    DATABASE_URL: databaseUrl ?? undefined,
    LOG_LEVEL: 'warn',
    NODE_ENV: 'test',
    ...extra,
  };
}

/** Starts `ark-cp serve` (its bundle, test/harness/bundles.ts) and waits until it answers /healthz. */
export async function startControlPlane(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const port = options.port ?? (await freePort());
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'ark-e2e-cp-'));
  const env = controlPlaneEnv(port, dataDir, options.databaseUrl, options.env);
  const child = spawnProcess(process.execPath, [controlPlaneBundle, 'serve'], {
    cwd: repoRoot,
    env,
    exitSignal: 'SIGKILL',
  });
  const base = `http://127.0.0.1:${port}`;
  // An exit ends the wait at once (waitFor would take a throw for "not yet" and poll on to its timeout).
  const started = await waitFor(async () => (child.isRunning() ? (await fetch(`${base}/healthz`)).ok : 'exited'), {
    timeoutMs: 60_000,
    intervalMs: 200,
    description: 'the control plane to answer /healthz',
  }).catch((error: Error) => error);
  if (started !== true) {
    const why = started instanceof Error ? started.message : `the control plane exited (${JSON.stringify(await child.exited)})`;
    throw new Error(`${why}\n--- control plane output (port ${port}) ---\n${child.output()}`);
  }
  return { base, port, dataDir, env, process: child };
}

/** Runs an `ark-cp` CLI command against the same store. */
export async function controlPlaneCli(cp: Pick<ControlPlane, 'env'>, args: string[]): Promise<string> {
  const { stdout } = await runCommand(process.execPath, [controlPlaneBundle, ...args], {
    cwd: repoRoot,
    env: cp.env,
    timeoutMs: 60_000,
  });
  return stdout;
}

export interface ApiAnswer {
  status: number;
  body: any;
}

export async function api(
  base: string,
  method: string,
  path: string,
  options: { token?: string; body?: unknown; idempotent?: boolean } = {},
): Promise<ApiAnswer> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  if (options.idempotent === true) headers['idempotency-key'] = randomUUID();
  const response = await fetch(`${base}${path}`, {
    method,
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await response.text();
  let body: unknown = null;
  try {
    body = text === '' ? null : JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: response.status, body };
}

/** Creates a verified host account with the CLI and signs in over HTTP; answers the session token. */
export async function hostSession(cp: ControlPlane, email = `host-${randomUUID().slice(0, 8)}@example.test`): Promise<string> {
  const password = 'correct horse battery staple';
  await controlPlaneCli(cp, ['accounts', 'create', '--email', email, '--role', 'host', '--password', password, '--verified']);
  const signIn = await api(cp.base, 'POST', '/api/v1/auth/sessions', { body: { email, password } });
  if (signIn.status !== 200 && signIn.status !== 201) throw new Error(`sign-in failed: ${signIn.status} ${JSON.stringify(signIn.body)}`);
  return signIn.body.session_token as string;
}

export interface AgentSetup {
  stateDir: string;
  configPath: string;
  env: NodeJS.ProcessEnv;
}

/** A state dir and a config file for one agent; intervals are the test's to choose. */
export function agentSetup(config: Record<string, unknown>, env: NodeJS.ProcessEnv = {}): AgentSetup {
  const dir = mkdtempSync(join(tmpdir(), 'ark-e2e-agent-'));
  const stateDir = join(dir, 'state');
  const configPath = join(dir, 'config.json');
  writeFileSync(configPath, JSON.stringify(config, null, 2));
  return { stateDir, configPath, env: { ARK_AGENT_STATE_DIR: stateDir, ARK_AGENT_CONFIG: configPath, ...env } };
}

export function startAgent(setup: AgentSetup, args: string[]): SpawnedProcess {
  return spawnProcess(process.execPath, [agentBin, ...args], { cwd: repoRoot, env: setup.env, exitSignal: 'SIGKILL' });
}

/**
 * `ark-agent pair`: reads the user code from its output, approves it as the host (over HTTP, or with `approve`, e.g.
 * `ark machines approve`), waits for enrollment, then lists the machine as a CPU machine (test rigs report no GPU).
 */
export async function pairAgent(
  cp: ControlPlane,
  token: string,
  setup: AgentSetup,
  approve?: (userCode: string) => Promise<void>,
): Promise<{ machineId: string; userCode: string; output: string }> {
  const pair = startAgent(setup, ['pair', '--control-plane', cp.base]);
  try {
    const userCode = await waitFor(
      () => {
        if (!pair.isRunning()) throw new Error(`ark-agent pair exited early:\n${pair.output()}`);
        return /User code:\s+(\S+)/.exec(pair.output())?.[1];
      },
      { timeoutMs: 60_000, intervalMs: 50, description: 'the user code on ark-agent pair output' },
    );
    if (approve !== undefined) await approve(userCode);
    else {
      const approved = await api(cp.base, 'POST', '/api/v1/hosts/pairings/approve', {
        token,
        idempotent: true,
        body: { user_code: userCode, go_live: true },
      });
      if (approved.status !== 200) throw new Error(`approve failed: ${approved.status} ${JSON.stringify(approved.body)}`);
    }
    const exit = await Promise.race([pair.exited, new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 60_000))]);
    if (exit === 'timeout' || exit.code !== 0) throw new Error(`ark-agent pair did not finish: ${JSON.stringify(exit)}\n${pair.output()}`);
    const machineId = /Paired: this machine is ([0-9a-f-]{36})/.exec(pair.output())?.[1];
    if (machineId === undefined) throw new Error(`no machine id on ark-agent pair output:\n${pair.output()}`);
    // The test rigs report no GPU: offered only once their host lists them as CPU machines.
    const listed = await api(cp.base, 'POST', `/api/v1/hosts/machines/${machineId}/cpu-listing`, {
      token,
      idempotent: true,
      body: { cpu_listing: true },
    });
    if (listed.status !== 200) throw new Error(`cpu-listing failed: ${listed.status} ${JSON.stringify(listed.body)}`);
    return { machineId, userCode, output: pair.output() };
  } finally {
    await pair.stop('SIGKILL');
  }
}

const EXITED = Symbol('exited');

/** waitFor that gives up at once, with the process's output, if `child` exits while waiting. */
export async function waitWhileRunning<T>(
  child: SpawnedProcess,
  probe: () => T | Promise<T>,
  options: { timeoutMs: number; intervalMs?: number; description: string },
): Promise<Exclude<T, false | null | undefined>> {
  const value = await waitFor(async () => (child.isRunning() ? probe() : EXITED), options);
  if (value === EXITED) throw new Error(`the process exited while waiting for ${options.description}:\n${child.output()}`);
  return value as Exclude<T, false | null | undefined>;
}

/** `ark-agent status --json`. */
export async function agentStatus(setup: AgentSetup): Promise<any> {
  const { stdout } = await runCommand(process.execPath, [agentBin, 'status', '--json'], {
    cwd: repoRoot,
    env: setup.env,
    timeoutMs: 30_000,
  });
  return JSON.parse(stdout);
}
