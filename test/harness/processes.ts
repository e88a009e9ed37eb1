// Generic helpers for end-to-end tests that start real processes: free ports, child processes
// that are stopped by their own PID (never by name), bounded waits and one-shot commands.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { createWriteStream, readFileSync, type WriteStream } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { createServer } from 'node:net';

export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface SpawnProcessOptions {
  /** Merged over process.env (set a key to undefined to remove it). */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** stdout and stderr are appended here as well as kept in memory. */
  logFile?: string;
  /** The in-memory output keeps only its last bytes, so a chatty daemon cannot fill the heap. */
  outputLimitBytes?: number;
  /**
   * Signal sent if the test process exits while this child still runs. SIGKILL by default;
   * daemons that must clean up after themselves (dockerd) ask for SIGTERM.
   */
  exitSignal?: NodeJS.Signals;
}

export interface StopOptions {
  /** How long to wait after the first signal before SIGKILL. */
  timeoutMs?: number;
}

export interface SpawnedProcess {
  pid: number;
  child: ChildProcess;
  /** Resolves once the process has exited; never rejects. */
  exited: Promise<ProcessExit>;
  isRunning(): boolean;
  /** The last outputLimitBytes of stdout and stderr, interleaved as they arrived. */
  output(): string;
  /** Sends `signal` (SIGTERM by default) to this PID only, then SIGKILL after the timeout. */
  stop(signal?: NodeJS.Signals, options?: StopOptions): Promise<ProcessExit>;
}

const defaultOutputLimitBytes = 256 * 1024;
const defaultStopTimeoutMs = 10_000;

// Children still running when the test process exits are signalled so a crashed or interrupted
// test run leaves nothing behind. Only PIDs we spawned are in this set.
const liveChildren = new Map<number, NodeJS.Signals>();
let exitHookInstalled = false;

function signalChildren(): void {
  for (const [pid, signal] of liveChildren) {
    try {
      process.kill(pid, signal);
    } catch {
      // Already gone.
    }
  }
  liveChildren.clear();
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', signalChildren);
  // A signal's death runs no 'exit' handler, and that is how vitest ends a worker whose test timed out (its finally
  // never ran): a timed-out cluster test left three replicas, HAProxy, PostgreSQL, dockerd and anvil running, each run
  // after it slower for them. Signal the children, then die of the same signal as before.
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
    process.once(signal, () => {
      signalChildren();
      process.kill(process.pid, signal);
    });
  }
}

/** A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it). */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        server.close();
        reject(new Error('could not read the port of a probe listener'));
        return;
      }
      const { port } = address;
      server.close(() => resolve(port));
    });
  });
}

/** Linux's first ephemeral port (ip_local_port_range); 32768, its default, where that cannot be read. */
function ephemeralPortLow(): number {
  try {
    const low = Number.parseInt(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0] ?? '', 10);
    return Number.isInteger(low) ? low : 32_768;
  } catch {
    return 32_768;
  }
}

/** Whether a listener could bind `port` on `host` just now. */
function canListen(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, host, () => server.close(() => resolve(true)));
  });
}

/**
 * A TCP port on 127.0.0.1 from 10000-19999, below the ephemeral range, that no listener holds now. freePort's port
 * is an ephemeral one: until its server binds it, and again while that server is down for a restart on the same port,
 * any outgoing connection on the machine may take it as its source port, and the bind fails. No connection takes
 * this one; only another listener could (no test picks from this range), and that fails loudly at the bind.
 * 20000-32767 is left to the agents' job port ranges (rental-helpers.ts). Falls back to freePort where the
 * ephemeral range was moved below 20000.
 */
export async function stablePort(host = '127.0.0.1'): Promise<number> {
  const [low, high] = [10_000, Math.min(20_000, ephemeralPortLow())];
  if (high - low < 1_000) return freePort(host);
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low));
    if (await canListen(port, host)) return port;
  }
  throw new Error(`no free port in ${low}-${high - 1} on ${host} after 50 tries`);
}

export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM means it exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  // A zombie still answers signal 0; it has exited for every purpose a test cares about.
  return !isZombieSync(pid);
}

function isZombieSync(pid: number): boolean {
  try {
    // Synchronous on purpose: isProcessAlive is used inside assertions.
    return parseStat(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.state === 'Z';
  } catch {
    return false;
  }
}

export function spawnProcess(command: string, args: readonly string[], options: SpawnProcessOptions = {}): SpawnedProcess {
  installExitHook();
  const outputLimitBytes = options.outputLimitBytes ?? defaultOutputLimitBytes;
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let spawnError: Error | undefined;
  child.once('error', (error) => {
    spawnError = error;
  });
  const pid = child.pid;
  if (pid === undefined) {
    throw new Error(`could not start ${command}: the executable was not found or not executable`);
  }
  liveChildren.set(pid, options.exitSignal ?? 'SIGKILL');

  let log: WriteStream | undefined;
  if (options.logFile !== undefined) log = createWriteStream(options.logFile, { flags: 'a' });

  const chunks: Buffer[] = [];
  let bufferedBytes = 0;
  const collect = (chunk: Buffer): void => {
    log?.write(chunk);
    chunks.push(chunk);
    bufferedBytes += chunk.length;
    while (bufferedBytes > outputLimitBytes && chunks.length > 1) {
      bufferedBytes -= chunks.shift()?.length ?? 0;
    }
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);

  let running = true;
  const exited = new Promise<ProcessExit>((resolve) => {
    child.once('exit', (code, signal) => {
      running = false;
      liveChildren.delete(pid);
      resolve({ code, signal });
    });
    child.once('error', () => {
      // A spawn failure after the PID was assigned still ends the process's life.
      if (child.exitCode === null && child.signalCode === null && spawnError !== undefined) {
        running = false;
        liveChildren.delete(pid);
        resolve({ code: null, signal: null });
      }
    });
  });
  void exited.then(() => log?.end());

  const stop = async (signal: NodeJS.Signals = 'SIGTERM', stopOptions: StopOptions = {}): Promise<ProcessExit> => {
    if (!running) return exited;
    const timeoutMs = stopOptions.timeoutMs ?? defaultStopTimeoutMs;
    // child.kill signals exactly this PID, and does nothing once Node has reaped it.
    child.kill(signal);
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), timeoutMs);
    });
    const first = await Promise.race([exited, timedOut]);
    clearTimeout(timer);
    if (first === 'timeout') child.kill('SIGKILL');
    return exited;
  };

  return {
    pid,
    child,
    exited,
    isRunning: () => running,
    output: () => Buffer.concat(chunks).toString('utf8'),
    stop,
  };
}

export interface WaitForOptions {
  timeoutMs: number;
  intervalMs?: number;
  /** Names the condition in the timeout error. */
  description?: string;
}

/**
 * Polls `probe` until it returns a value other than false, null or undefined, and returns that
 * value. A probe that throws counts as "not yet"; the last error is quoted if time runs out.
 */
export async function waitFor<T>(probe: () => T | Promise<T>, options: WaitForOptions): Promise<Exclude<T, false | null | undefined>> {
  const intervalMs = options.intervalMs ?? 100;
  const deadline = Date.now() + options.timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== false && value !== null && value !== undefined) {
        return value as Exclude<T, false | null | undefined>;
      }
    } catch (error) {
      lastError = error;
    }
    if (Date.now() >= deadline) {
      const what = options.description ?? 'condition';
      const cause = lastError instanceof Error ? `: last error: ${lastError.message}` : '';
      throw new Error(`timed out after ${options.timeoutMs} ms waiting for ${what}${cause}`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

export interface RunCommandOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  timeoutMs?: number;
  /** Largest stdout or stderr kept; beyond it the command fails rather than eat memory. */
  maxBufferBytes?: number;
}

export interface CommandResult {
  stdout: string;
  stderr: string;
}

/** Runs a command to completion; a non-zero exit rejects with its output in the message. */
export async function runCommand(command: string, args: readonly string[], options: RunCommandOptions = {}): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      {
        cwd: options.cwd,
        env: { ...process.env, ...options.env },
        timeout: options.timeoutMs ?? 120_000,
        maxBuffer: options.maxBufferBytes ?? 16 * 1024 * 1024,
        encoding: 'utf8',
      },
      (error, stdout, stderr) => {
        if (error) {
          const detail = [stderr.trim(), stdout.trim()].filter((part) => part !== '').join('\n');
          reject(new Error(`${command} ${args.join(' ')} failed: ${error.message}\n${detail}`));
          return;
        }
        resolve({ stdout, stderr });
      },
    );
  });
}

interface ProcStat {
  pid: number;
  parentPid: number;
  state: string;
  startTicks: string;
}

// /proc/<pid>/stat: "pid (comm) state ppid ... starttime(22nd field)". comm may hold spaces and
// parentheses, so split after the last ')'.
function parseStat(text: string): ProcStat | undefined {
  const close = text.lastIndexOf(')');
  if (close < 0) return undefined;
  const pid = Number.parseInt(text.slice(0, text.indexOf(' ')), 10);
  const fields = text.slice(close + 2).split(' ');
  const state = fields[0];
  const parentPid = fields[1];
  const startTicks = fields[19];
  if (state === undefined || parentPid === undefined || startTicks === undefined) return undefined;
  return { pid, parentPid: Number.parseInt(parentPid, 10), state, startTicks };
}

export interface ProcessInfo {
  pid: number;
  parentPid: number;
  /** Clock ticks since boot at which it started: with the PID, names one process even if PIDs are reused. */
  startTicks: string;
  commandLine: string;
}

/** A snapshot of every process visible in /proc. */
export async function listProcesses(): Promise<ProcessInfo[]> {
  const entries = await readdir('/proc');
  const processes: ProcessInfo[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const [stat, commandLine] = await Promise.all([readFile(`/proc/${entry}/stat`, 'utf8'), readFile(`/proc/${entry}/cmdline`, 'utf8')]);
      const parsed = parseStat(stat);
      if (parsed === undefined || parsed.state === 'Z') continue;
      processes.push({
        pid: parsed.pid,
        parentPid: parsed.parentPid,
        startTicks: parsed.startTicks,
        commandLine: commandLine.split('\0').join(' ').trim(),
      });
    } catch {
      // The process ended while we read it.
    }
  }
  return processes;
}

/** The given roots plus all their descendants, from one snapshot. */
export function withDescendants(processes: readonly ProcessInfo[], roots: readonly ProcessInfo[]): ProcessInfo[] {
  const byParent = new Map<number, ProcessInfo[]>();
  for (const info of processes) {
    const siblings = byParent.get(info.parentPid) ?? [];
    siblings.push(info);
    byParent.set(info.parentPid, siblings);
  }
  const found = new Map<number, ProcessInfo>();
  const queue = [...roots];
  while (queue.length > 0) {
    const next = queue.pop();
    if (next === undefined || found.has(next.pid)) continue;
    found.set(next.pid, next);
    queue.push(...(byParent.get(next.pid) ?? []));
  }
  return [...found.values()];
}

/** Whether this exact process (PID and start time) still runs. */
export async function isSameProcessAlive(info: ProcessInfo): Promise<boolean> {
  try {
    const parsed = parseStat(await readFile(`/proc/${info.pid}/stat`, 'utf8'));
    return parsed !== undefined && parsed.state !== 'Z' && parsed.startTicks === info.startTicks;
  } catch {
    return false;
  }
}
