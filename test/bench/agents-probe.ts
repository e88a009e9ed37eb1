// The bench side of agents.bench.ts's child processes: starting a control-plane server (agents-server.ts) or an
// agents client (agents-client.ts) and talking to it over IPC, CPU time from /proc, the gateway's /metrics
// histograms, and the bare-socket baseline: memory per agent, and CPU per frame (bench-floor.ts).
import { type ChildProcess, execSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { CHANNEL_PATH } from '@ark/shared';
import WebSocket from 'ws';
import { driveFloor, type FloorLoad } from './bench-floor.js';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const serverScripts = {
  app: fileURLToPath(new URL('./agents-server.ts', import.meta.url)),
  raw: fileURLToPath(new URL('./raw-socket-server.ts', import.meta.url)),
};
const clientScript = fileURLToPath(new URL('./agents-client.ts', import.meta.url));

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A child process on IPC: `ask` sends a message and resolves with the first answer of the given type. */
export interface Child {
  child: ChildProcess;
  ask<T = Record<string, unknown>>(message: Record<string, unknown>, answer: string): Promise<T>;
  stop(): Promise<void>;
}

function startChild(
  script: string,
  flags: string[],
  env: NodeJS.ProcessEnv,
  label: string,
  readyType: string,
): Promise<{ child: Child; ready: Record<string, unknown> }> {
  const child = spawn(process.execPath, [...flags, '--import', 'tsx', script], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const ask = <T>(message: Record<string, unknown>, answer: string) =>
    new Promise<T>((resolve, reject) => {
      const onExit = (code: number | null) => reject(new Error(`${label} exited with ${code}`));
      const onMessage = (reply: { type?: string }) => {
        if (reply?.type !== answer) return;
        child.off('message', onMessage);
        child.off('exit', onExit);
        resolve(reply as T);
      };
      child.on('message', onMessage);
      child.once('exit', onExit);
      if (Object.keys(message).length > 0) child.send(message);
    });
  const handle: Child = {
    child,
    ask,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
  const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${label} did not start in 60 s`)), 60_000).unref());
  return Promise.race([ask<Record<string, unknown>>({}, readyType), timeout]).then((ready) => ({ child: handle, ready }));
}

export interface ChildServer extends Child {
  port: number;
  memory(): Promise<NodeJS.MemoryUsage>;
}

/** A control-plane server (`app`, agents-server.ts) or a bare ws server (`raw`, raw-socket-server.ts) in a child process. */
export async function startServer(mode: 'app' | 'raw', env: NodeJS.ProcessEnv = {}): Promise<ChildServer> {
  // ARK_BENCH_SERVER_FLAGS adds node flags to the server (e.g. --cpu-prof --cpu-prof-dir=/tmp/prof).
  const extraFlags = (process.env.ARK_BENCH_SERVER_FLAGS ?? '').split(' ').filter(Boolean);
  const { child, ready } = await startChild(serverScripts[mode], [...extraFlags, '--expose-gc'], env, `${mode} server`, 'ready');
  return {
    ...child,
    port: ready.port as number,
    memory: () => child.ask<NodeJS.MemoryUsage>({ type: 'gc' }, 'memory'),
  };
}

/** An agents client (agents-client.ts), initialised with its share of the fleet. */
export async function startClient(init: Record<string, unknown>): Promise<Child> {
  const { child } = await startChild(clientScript, [], {}, 'agents client', 'started');
  await child.ask(init, 'ready');
  return child;
}

/** CPU time (user + system) a process has used, in ms. */
export function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicksPerS;
}

const clockTicksPerS = (() => {
  try {
    return Number(execSync('getconf CLK_TCK', { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

export function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
}

export interface Histogram {
  buckets: Map<number, number>;
  count: number;
  /** The same per message type. */
  byType: Map<string, { buckets: Map<number, number>; count: number }>;
}

export async function scrape(port: number): Promise<{ handling: Histogram; closes: number; loopDelayP99Ms: number | null }> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const buckets = new Map<number, number>();
  const byType = new Map<string, { buckets: Map<number, number>; count: number }>();
  const typed = (type: string) => {
    let entry = byType.get(type);
    if (!entry) {
      entry = { buckets: new Map(), count: 0 };
      byType.set(type, entry);
    }
    return entry;
  };
  let count = 0;
  let closes = 0;
  let loopDelayP99Ms: number | null = null;
  for (const line of text.split('\n')) {
    let match = /^ark_channel_frame_handling_seconds_bucket\{le="([^"]+)",type="([^"]+)"\} (\d+)/.exec(line);
    if (match) {
      const le = match[1] === '+Inf' ? Number.POSITIVE_INFINITY : Number(match[1]);
      buckets.set(le, (buckets.get(le) ?? 0) + Number(match[3]));
      const entry = typed(match[2] as string);
      entry.buckets.set(le, (entry.buckets.get(le) ?? 0) + Number(match[3]));
      continue;
    }
    match = /^ark_channel_frame_handling_seconds_count\{type="([^"]+)"\} (\d+)/.exec(line);
    if (match) {
      count += Number(match[2]);
      typed(match[1] as string).count += Number(match[2]);
      continue;
    }
    match = /^ark_channel_closes_total\{reason="([^"]+)"\} (\d+)/.exec(line);
    if (match) {
      closes += Number(match[2]);
      continue;
    }
    match = /^ark_cp_nodejs_eventloop_lag_p99_seconds (\S+)/.exec(line);
    if (match) loopDelayP99Ms = Number(match[1]) * 1000;
  }
  return { handling: { buckets, count, byType }, closes, loopDelayP99Ms };
}

/** The 99th percentile's bucket bound (ms) and the share within 50 ms, of the frames handled between two scrapes. */
export function histogramDelta(
  before: Pick<Histogram, 'buckets' | 'count'>,
  after: Pick<Histogram, 'buckets' | 'count'>,
): { p99Ms: number | null; within50Pct: number | null } {
  const total = after.count - before.count;
  if (total <= 0) return { p99Ms: null, within50Pct: null };
  let p99Ms: number | null = null;
  let within50Pct: number | null = null;
  for (const le of [...after.buckets.keys()].sort((a, b) => a - b)) {
    const cumulative = (after.buckets.get(le) ?? 0) - (before.buckets.get(le) ?? 0);
    if (p99Ms === null && cumulative >= 0.99 * total) p99Ms = le * 1000;
    if (le === 0.05) within50Pct = (100 * cumulative) / total;
  }
  return { p99Ms, within50Pct };
}

export function fdLimit(): number | null {
  try {
    return Number(execSync('ulimit -n', { shell: '/bin/sh', encoding: 'utf8' }).trim()) || null;
  } catch {
    return null;
  }
}

/** What a bare ws server costs at one level: RSS and heap a socket, and CPU a frame when a floor was measured. */
export interface RawBaseline {
  rss: number;
  heap: number;
  /** The bare server's CPU a frame answered (us), echoing at the level's load; null when not measured. */
  floorCpuUsPerFrame: number | null;
}

/** How long the floor's sockets send before its CPU is measured (the ws code warms up). */
const FLOOR_WARM_UP_MS = 2_000;

/**
 * The bare ws server at each level, from a server holding only sockets: RSS and heap per socket, then, with `floor`,
 * its CPU per frame while it answers every frame with an ack at the level's load (`loadOf`) for `holdS` seconds.
 */
export async function rawSocketBaseline(
  levels: number[],
  log: (line: string) => void,
  floor?: { loadOf(level: number): FloorLoad; holdS: number },
): Promise<Map<number, RawBaseline>> {
  const server = await startServer('raw');
  const result = new Map<number, RawBaseline>();
  const sockets: WebSocket[] = [];
  try {
    const base = await server.memory();
    for (const level of levels) {
      while (sockets.length < level) {
        const batch = Math.min(200, level - sockets.length);
        const opened = await Promise.all(
          Array.from({ length: batch }, () => {
            const ws = new WebSocket(`ws://127.0.0.1:${server.port}${CHANNEL_PATH}?v=1`, { perMessageDeflate: false });
            sockets.push(ws);
            return new Promise<boolean>((resolve) => {
              ws.once('open', () => resolve(true));
              ws.once('error', () => resolve(false));
            });
          }),
        );
        if (opened.includes(false)) throw new Error(`bare sockets failed to open at ${sockets.length}`);
      }
      await sleep(1_000);
      const memory = await server.memory();
      const perSocket = { rss: (memory.rss - base.rss) / level, heap: (memory.heapUsed - base.heapUsed) / level };
      log(
        `bare ws server: ${level} sockets, ${(perSocket.rss / 1024).toFixed(1)} KB RSS and ${(perSocket.heap / 1024).toFixed(1)} KB heap each`,
      );
      const floorCpuUsPerFrame = floor ? await measureFloor(server, sockets, floor.loadOf(level), floor.holdS, log) : null;
      result.set(level, { ...perSocket, floorCpuUsPerFrame });
    }
  } finally {
    for (const ws of sockets) ws.terminate();
    await server.stop();
  }
  return result;
}

/** The bare server's CPU per frame while it answers `sockets` sending at `load` for `holdS` seconds. */
async function measureFloor(server: ChildServer, sockets: WebSocket[], load: FloorLoad, holdS: number, log: (line: string) => void) {
  await server.ask({ type: 'echo', on: true }, 'echoing');
  const driver = driveFloor(sockets, load);
  try {
    await sleep(FLOOR_WARM_UP_MS);
    driver.count();
    const cpuBefore = cpuMs(server.child.pid as number);
    await sleep(holdS * 1000);
    const cpu = cpuMs(server.child.pid as number) - cpuBefore;
    const frames = driver.count();
    const perFrame = frames > 0 ? Math.round((1000 * cpu) / frames) : null;
    log(
      `bare ws server: ${sockets.length} sockets answering ${Math.round(frames / holdS)} frames/s (${Math.round(100 * load.largeShare)}% telemetry-sized): ${(cpu / holdS / 10).toFixed(1)}% of a core, ${perFrame} us/frame`,
    );
    return perFrame;
  } finally {
    driver.stop();
    await server.ask({ type: 'echo', on: false }, 'echoing');
    // The last acks in flight land before the next level's memory reading.
    await sleep(500);
  }
}
