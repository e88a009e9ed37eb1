// A private Docker engine per test suite: its own dockerd (which launches its own containerd)
// with socket, data root and exec root under one temporary folder, stopped by its PID. It never
// talks to, or signals, any other Docker on the machine.
import { accessSync, constants } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import {
  type CommandResult,
  isProcessAlive,
  isSameProcessAlive,
  listProcesses,
  type ProcessInfo,
  type RunCommandOptions,
  runCommand,
  spawnProcess,
  waitFor,
  withDescendants,
} from './processes.js';

// dockerd and the tools it launches (containerd, runc, shims) live in sbin directories that a
// non-login PATH can miss.
const systemPath = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];
const searchPath = [...(process.env.PATH ?? '').split(delimiter), ...systemPath].filter(
  (entry, index, all) => entry !== '' && all.indexOf(entry) === index,
);
export const harnessPath = searchPath.join(delimiter);

/** The absolute path of an executable found on PATH or the system directories, if any. */
export function findExecutable(name: string, preferred: readonly string[] = []): string | undefined {
  for (const candidate of [...preferred, ...searchPath.map((directory) => join(directory, name))]) {
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here.
    }
  }
  return undefined;
}

/** Debian package that provides each tool the Docker harness needs. */
const requiredTools: Record<string, string> = {
  dockerd: 'docker.io',
  containerd: 'containerd (a dependency of docker.io)',
  runc: 'runc (a dependency of docker.io)',
  docker: 'docker.io',
  'docker-registry': 'docker-registry',
  busybox: 'busybox-static',
  tar: 'tar',
  umount: 'mount',
};

/** The docker CLI; Debian's own (same API version as its dockerd) before any other on PATH. */
export function dockerCliPath(): string | undefined {
  return findExecutable('docker', ['/usr/bin/docker']);
}

/** What stops the Docker harness from running here, as readable sentences; empty when nothing. */
export function dockerUnavailableReasons(): string[] {
  const reasons: string[] = [];
  for (const [tool, pkg] of Object.entries(requiredTools)) {
    const found = tool === 'docker' ? dockerCliPath() : findExecutable(tool);
    if (found === undefined) reasons.push(`${tool} is not installed (Debian package ${pkg})`);
  }
  if (process.getuid?.() !== 0) reasons.push('dockerd needs root and this test runs as another user');
  return reasons;
}

/**
 * Whether this machine can run the Docker harness (dockerd, the CLI, Debian's registry and a
 * static busybox). In CI the tools are installed by .ci/run, so a missing one is a broken machine:
 * this throws there instead of letting suites skip silently.
 */
export function isDockerAvailable(): boolean {
  const reasons = dockerUnavailableReasons();
  if (reasons.length === 0) return true;
  if (process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false') {
    throw new Error(
      `the Docker test harness cannot run in CI: ${reasons.join('; ')}. .ci/run installs ` +
        'docker.io, docker-registry and busybox-static with apt-get; run it, or install them.',
    );
  }
  return false;
}

export interface StartDockerdOptions {
  /** Bound on the wait for /_ping to answer. */
  startTimeoutMs?: number;
  /** Bound on dockerd's own graceful shutdown before everything it started is killed. */
  stopTimeoutMs?: number;
  /** Extra dockerd flags, appended after the harness's own. */
  extraArgs?: readonly string[];
}

export interface DockerDaemon {
  /** The daemon's unix socket; dockerode takes it as `{ socketPath }`. */
  socketPath: string;
  /** `unix://<socketPath>`, the value for DOCKER_HOST. */
  host: string;
  dataRoot: string;
  execRoot: string;
  /** The temporary folder holding everything; removed by stop(). */
  directory: string;
  pid: number;
  /** The last few hundred KB of dockerd's log, for failure messages. */
  output(): string;
  /** Environment that points the docker CLI (and DOCKER_HOST readers) at this daemon only. */
  env: NodeJS.ProcessEnv;
  /** Runs the docker CLI against this daemon. */
  docker(args: readonly string[], options?: RunCommandOptions): Promise<CommandResult>;
  /** Stops dockerd (SIGTERM, then SIGKILL for it and what it started), unmounts, removes the folder. */
  stop(): Promise<void>;
}

const defaultStartTimeoutMs = 60_000;
const defaultStopTimeoutMs = 20_000;
// Unix socket paths are limited to 108 bytes; containerd's socket sits deepest.
const longestSocketSuffix = '/exec/containerd/containerd.sock.ttrpc';
const socketPathLimit = 107;

async function makeDaemonDirectory(): Promise<string> {
  const base = tmpdir();
  const root = base.length + 'ark-dockerd-XXXXXX'.length + longestSocketSuffix.length + 1 < socketPathLimit ? base : '/tmp';
  return mkdtemp(join(root, 'ark-dockerd-'));
}

/** GET /_ping over the socket; true once the daemon answers "OK". */
export function pingDocker(socketPath: string, timeoutMs = 2_000): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ socketPath, path: '/_ping', method: 'GET', timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () => resolve(res.statusCode === 200 && body.trim() === 'OK'));
      res.on('error', () => resolve(false));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}

export async function startDockerd(options: StartDockerdOptions = {}): Promise<DockerDaemon> {
  if (!isDockerAvailable()) {
    throw new Error(`cannot start dockerd: ${dockerUnavailableReasons().join('; ')}`);
  }
  const dockerd = findExecutable('dockerd') as string;
  const dockerCli = dockerCliPath() as string;
  const directory = await makeDaemonDirectory();
  const socketPath = join(directory, 'docker.sock');
  const dataRoot = join(directory, 'root');
  const execRoot = join(directory, 'exec');
  const configFile = join(directory, 'daemon.json');
  const cliConfigDirectory = join(directory, 'cli');
  await mkdir(cliConfigDirectory);
  // An empty daemon.json of our own: the machine's /etc/docker/daemon.json may name hosts or
  // drivers that conflict with ours.
  await writeFile(configFile, '{}\n');
  await writeFile(join(cliConfigDirectory, 'config.json'), '{}\n');

  const args = [
    `--config-file=${configFile}`,
    `--host=unix://${socketPath}`,
    `--data-root=${dataRoot}`,
    `--exec-root=${execRoot}`,
    `--pidfile=${join(directory, 'docker.pid')}`,
    // vfs works on any filesystem (overlay-on-overlay does not) at the cost of full copies.
    '--storage-driver=vfs',
    // Leave the host's firewall, forwarding and bridges alone: job containers in tests use host
    // networking or none.
    '--iptables=false',
    '--ip6tables=false',
    '--ip-forward=false',
    '--ip-masq=false',
    '--bridge=none',
    // Tests stop daemons with containers still running; a long grace only slows them down.
    '--shutdown-timeout=2',
    ...(options.extraArgs ?? []),
  ];
  const env: NodeJS.ProcessEnv = {
    DOCKER_HOST: `unix://${socketPath}`,
    DOCKER_CONFIG: cliConfigDirectory,
    DOCKER_CONTEXT: undefined,
    DOCKER_TLS_VERIFY: undefined,
    DOCKER_CERT_PATH: undefined,
  };
  const child = spawnProcess(dockerd, args, {
    env: { PATH: harnessPath },
    // If the test process dies first, SIGTERM lets dockerd stop its containers and containerd.
    exitSignal: 'SIGTERM',
  });

  const stopTimeoutMs = options.stopTimeoutMs ?? defaultStopTimeoutMs;
  const docker = (dockerArgs: readonly string[], runOptions: RunCommandOptions = {}) =>
    runCommand(dockerCli, dockerArgs, { ...runOptions, env: { ...runOptions.env, ...env } });
  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopped ??= (async () => {
      if (child.isRunning()) await removeAllContainers(docker);
      await stopDaemon(child, directory, stopTimeoutMs);
    })();
    return stopped;
  };

  try {
    const startTimeoutMs = options.startTimeoutMs ?? defaultStartTimeoutMs;
    const state = await waitFor(
      async () => {
        if (!child.isRunning()) return 'exited';
        return (await pingDocker(socketPath)) ? 'ready' : false;
      },
      { timeoutMs: startTimeoutMs, intervalMs: 100, description: `dockerd on ${socketPath}` },
    );
    if (state === 'exited') {
      const exit = await child.exited;
      throw new Error(`dockerd exited during start-up (code ${exit.code}, signal ${exit.signal}):\n${tail(child.output())}`);
    }
  } catch (error) {
    const log = tail(child.output());
    await stop();
    if (error instanceof Error && !error.message.includes('dockerd exited')) {
      error.message += `\n--- dockerd output ---\n${log}`;
    }
    throw error;
  }

  return {
    socketPath,
    host: `unix://${socketPath}`,
    dataRoot,
    execRoot,
    directory,
    pid: child.pid,
    output: child.output,
    env,
    docker,
    stop,
  };
}

/**
 * On shutdown dockerd gives each running container its own stop timeout (10 s by default, not
 * --shutdown-timeout), and a busybox PID 1 ignores SIGTERM; removing them by force first keeps
 * stop() fast. Best effort: the process sweep after dockerd exits is the real guarantee.
 */
async function removeAllContainers(
  docker: (args: readonly string[], options?: RunCommandOptions) => Promise<CommandResult>,
): Promise<void> {
  try {
    const { stdout } = await docker(['ps', '--all', '--quiet', '--no-trunc'], { timeoutMs: 10_000 });
    const ids = stdout
      .split('\n')
      .map((line) => line.trim())
      .filter((line) => line !== '');
    if (ids.length > 0) await docker(['rm', '--force', '--volumes', ...ids], { timeoutMs: 30_000 });
  } catch {
    // A daemon too broken to answer is stopped by signal below.
  }
}

function tail(text: string, lines = 40): string {
  return text.split('\n').slice(-lines).join('\n');
}

async function stopDaemon(child: ReturnType<typeof spawnProcess>, directory: string, stopTimeoutMs: number): Promise<void> {
  // Everything this daemon started names our folder on its command line: containerd
  // (--config <dir>/exec/...) and every shim (-address <dir>/exec/...). Container processes are
  // the shims' descendants. Shims re-parent to init, so dockerd's own descendants miss them.
  const ours = await processesOf(child.pid, directory);
  if (child.isRunning()) {
    child.child.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), stopTimeoutMs);
    });
    await Promise.race([child.exited, timeout]);
    clearTimeout(timer);
  }
  // Whatever survived a graceful stop (or was started after the snapshot) is killed outright.
  const survivors = [...ours, ...(await processesOf(child.pid, directory))];
  for (const info of survivors) {
    if (await isSameProcessAlive(info)) {
      try {
        process.kill(info.pid, 'SIGKILL');
      } catch {
        // Gone in between.
      }
    }
  }
  if (child.isRunning()) child.child.kill('SIGKILL');
  await child.exited;
  await waitFor(
    async () => {
      for (const info of survivors) if (await isSameProcessAlive(info)) return false;
      return true;
    },
    { timeoutMs: 10_000, intervalMs: 50, description: `processes of dockerd ${child.pid} to exit` },
  );
  await unmountUnder(directory);
  // vfs keeps a full copy of every layer and container; the folder can be large.
  await rm(directory, { recursive: true, force: true, maxRetries: 3 });
  if (isProcessAlive(child.pid)) throw new Error(`dockerd ${child.pid} is still alive after stop`);
}

async function processesOf(pid: number, directory: string): Promise<ProcessInfo[]> {
  const processes = await listProcesses();
  const roots = processes.filter((info) => info.pid === pid || info.commandLine.includes(`${directory}/`));
  return withDescendants(processes, roots).filter((info) => info.pid !== process.pid);
}

/**
 * dockerd bind-mounts its data root onto itself and network namespaces under its exec root; a
 * daemon that was killed leaves them mounted, and rm cannot remove a mount point.
 */
async function unmountUnder(directory: string): Promise<void> {
  const mountInfo = await readFile('/proc/self/mountinfo', 'utf8');
  const mountPoints = mountInfo
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((point): point is string => point !== undefined)
    // mountinfo escapes space, tab, newline and backslash as octal.
    .map((point) => point.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8))))
    .filter((point) => point === directory || point.startsWith(`${directory}/`))
    // Deepest first, so a parent mount is never busy because of a child.
    .sort((a, b) => b.length - a.length);
  for (const point of mountPoints) {
    await runCommand('umount', ['--lazy', point], { env: { PATH: harnessPath } }).catch(() => {
      // Already unmounted along with its parent.
    });
  }
}
