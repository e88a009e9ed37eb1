// How many agents one control-plane process holds. A child process runs the real control-plane app (store, gateway,
// every area's channel handlers; SQLite), and this process connects N simulated agents to it: each a real WebSocket
// with the challenge handshake and ed25519-signed frames (node:crypto signs here; the bytes are what tweetnacl
// would produce), a heartbeat every 15 s and a telemetry batch (6 samples, 2 GPUs) every 60 s, each at its own
// random phase; every control-plane frame is verified under the pinned key, as a real agent does.
//
// Levels ramp up in one run (ARK_BENCH_AGENTS, default 2000,5000,10000): connect the new agents (64 handshakes in
// flight), then hold for ARK_BENCH_HOLD_S (default 15: one heartbeat each) at the real intervals (no compressed timeline) and measure:
//   - p99 frame handling, server side: the gateway's histogram (arrival to acknowledgement sent), over the hold;
//   - p99 round trip, agent side: heartbeat or telemetry sent -> its ack verified (includes both event loops);
//   - the server's event-loop delay p99 over the hold;
//   - memory per agent: the server's RSS after a forced GC, minus its RSS before any agent, over N; and the same for
//     a bare ws server holding N sockets with the gateway's options (measured first, in its own child), so the
//     figure "beyond the raw socket" is a difference within one run.
// A level is held when every agent is connected, none was closed, and the server-side p99 is under 50 ms; it is
// held end to end when the agents' round-trip p99 is under 50 ms too. This machine has 2 cores and this process
// competes with the server for them (as does anything else running: the load average is reported), so the
// round trip is an upper bound that includes this process's own lag and the OS scheduler's.
// The agents check every control-plane frame's size, JSON, version, schema and sequence, and verify the handshake
// frames' signatures; ARK_BENCH_VERIFY=all verifies every ack too (more CPU taken from the server's two cores).
// SQLite by default (ARK_SQLITE_SYNCHRONOUS, default FULL as in production); ARK_BENCH_STORE=postgres for a fresh
// database on the local server. The bench machines are not rows of the machines table (they would need accounts
// and enrollment): the heartbeat handler's lookup finds none, so its update path is not exercised. Sockets: each side needs N descriptors (ulimit -n is read and
// reported; EMFILE ends the ramp and the largest N reached is reported).
// Replicas (issue 26 item 5): ARK_BENCH_REPLICAS=3 starts three control-plane processes on one PostgreSQL database and
// spreads the agents over them round robin; each level reports every replica's agents, CPU per frame and p99. Without
// a count, run() (what `pnpm bench` calls) does the single process first and then three replicas at
// ARK_BENCH_REPLICA_AGENTS (default 6000,12000,18000), so both sets of figures come from one run.
// The run is bounded by ARK_BENCH_MAX_S (default 170 s): a ramp that would overrun stops, and the level is reported
// with the agents it reached. Run: pnpm exec tsx test/bench/agents.bench.ts   (ARK_BENCH_AGENTS=1000,2000 ARK_BENCH_HOLD_S=20)
import { type ChildProcess, execSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { loadControlPlaneIdentity } from '@ark/control-plane/gateway/identity';
import { openStore } from '@ark/control-plane/store/db';
import {
  CHANNEL_MAX_FRAME_BYTES,
  CHANNEL_PATH,
  ed25519PublicKeyFromBase64,
  type FrameSigner,
  type FrameVerifier,
  nodeEd25519Signer,
  nodeEd25519Verifier,
  openFrame,
  signFrame,
} from '@ark/shared';
import WebSocket from 'ws';
import { createTestDatabase, type TestDatabase } from '../harness/postgres.js';
import { type BenchMachine, benchMachine } from './agents-server.js';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const serverScript = fileURLToPath(new URL('./agents-server.ts', import.meta.url));

export interface AgentsBenchOptions {
  /** Agent counts, ascending (default from ARK_BENCH_AGENTS, else 2000,5000,10000). */
  levels?: number[];
  /** Seconds held at each level (default from ARK_BENCH_HOLD_S, else 15). */
  holdS?: number;
  heartbeatIntervalS?: number;
  telemetryIntervalS?: number;
  /** Handshakes in flight during the ramp. */
  rampConcurrency?: number;
  /** The whole run's bound in seconds (default from ARK_BENCH_MAX_S, else 170): a ramp that would overrun stops. */
  maxS?: number;
  /** Skip the bare-socket baseline. */
  skipRawBaseline?: boolean;
  /** Verify every control-plane frame in the agents (default: only the handshake's; from ARK_BENCH_VERIFY=all). */
  verifyAll?: boolean;
  /** The control plane's store (default from ARK_BENCH_STORE, else sqlite); sqlite uses ARK_SQLITE_SYNCHRONOUS (FULL). */
  store?: 'sqlite' | 'postgres';
  /**
   * Control-plane processes over one PostgreSQL database, the agents spread over them round robin (default from
   * ARK_BENCH_REPLICAS, else 1). More than one implies postgres.
   */
  replicas?: number;
  log?: (line: string) => void;
}

export interface AgentsLevelFigures {
  agents: number;
  connected: number;
  rampS: number;
  handshakesPerS: number;
  heartbeats: number;
  telemetryBatches: number;
  /** Server side: upper bound of the histogram bucket holding the 99th percentile, over the hold. */
  serverHandlingP99Ms: number | null;
  /** Share of frames handled within 50 ms, server side. */
  serverWithin50MsPct: number | null;
  /** Server-side p99 bucket bound per message type (ms). */
  serverHandlingP99MsByType: Record<string, number | null>;
  eventLoopDelayP99Ms: number | null;
  rttP50Ms: number | null;
  rttP99Ms: number | null;
  rttMaxMs: number | null;
  closes: number;
  /** The server's CPU over the hold, in % of one core, and per frame handled. */
  serverCpuPctOfCore: number;
  serverCpuUsPerFrame: number | null;
  /** This process's (the agents') CPU over the hold, in % of one core. */
  agentsCpuPctOfCore: number;
  serverRssMb: number;
  rssPerAgentBytes: number;
  heapPerAgentBytes: number;
  rawSocketRssBytes: number | null;
  /** RSS per agent minus RSS per bare socket: the budget's "beyond the raw socket" (RSS moves in pages: noisy). */
  beyondRawSocketBytes: number | null;
  rawSocketHeapBytes: number | null;
  /** The same on the JS heap (steadier than RSS). */
  beyondRawSocketHeapBytes: number | null;
  /** Per replica (one entry on a single process): agents connected to it, its CPU per frame and its p99. */
  replicas: Array<{
    agents: number;
    frames: number;
    cpuPctOfCore: number;
    cpuUsPerFrame: number | null;
    p99Ms: number | null;
    rssMb: number;
  }>;
  /** All connected, no closes, and 99% of frames handled within 50 ms server side (the budget's measure). */
  held: boolean;
  /** The same with the agents' round trip p99 under 50 ms instead (includes this process and OS scheduling). */
  heldEndToEnd: boolean;
}

export interface AgentsBenchFigures {
  store: string;
  /** Control-plane processes the agents were spread over. */
  replicas: number;
  /** The machine's 1-minute load average when the run started and ended: other work competing for the 2 cores. */
  loadAverage: { start: number; end: number };
  cpus: number;
  fdLimit: number | null;
  holdS: number;
  levels: AgentsLevelFigures[];
  /** Largest level held (all connected, no closes, server p99 < 50 ms), or null. */
  largestHeld: number | null;
  /** Largest level whose agent round trip p99 was under 50 ms as well. */
  largestHeldEndToEnd: number | null;
  /** Set when descriptors ran out: the number of agents connected at that point. */
  fdExhaustedAt: number | null;
  /** Set when the time bound stopped a ramp: the number of agents connected at that point. */
  timeBoundAt: number | null;
  budgets: { p99Ms: number; beyondRawSocketBytesMax: number; targetAgents: number };
  withinBudget: { p99AtTarget: boolean | null; memory: boolean | null };
}

interface ChildServer {
  child: ChildProcess;
  port: number;
  memory(): Promise<NodeJS.MemoryUsage>;
  stop(): Promise<void>;
}

async function startServer(mode: 'app' | 'raw', env: NodeJS.ProcessEnv = {}): Promise<ChildServer> {
  // ARK_BENCH_SERVER_FLAGS adds node flags to the server (e.g. --cpu-prof --cpu-prof-dir=/tmp/prof).
  const extraFlags = (process.env.ARK_BENCH_SERVER_FLAGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...extraFlags, '--expose-gc', '--import', 'tsx', serverScript], {
    cwd: repoRoot,
    env: { ...process.env, ...env, ARK_BENCH_MODE: mode },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${mode} server did not start in 60 s`)), 60_000);
    child.once('exit', (code) => reject(new Error(`${mode} server exited with ${code}`)));
    child.on('message', (message: { type?: string; port?: number }) => {
      if (message.type === 'ready' && message.port) {
        clearTimeout(timer);
        resolve(message.port);
      }
    });
  });
  child.removeAllListeners('exit');
  return {
    child,
    port,
    memory: () =>
      new Promise((resolve) => {
        const onMessage = (message: { type?: string } & NodeJS.MemoryUsage) => {
          if (message.type !== 'memory') return;
          child.off('message', onMessage);
          resolve(message);
        };
        child.on('message', onMessage);
        child.send({ type: 'gc' });
      }),
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** CPU time (user + system) a process has used, in ms. */
function cpuMs(pid: number): number {
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

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function percentile(sorted: number[], p: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
}

/** Shared state of the simulated fleet. */
class Fleet {
  readonly urls: string[];
  /** Agents assigned so far (round robin over `urls`). */
  assigned = 0;
  readonly verify: FrameVerifier;
  readonly heartbeatIntervalMs: number;
  readonly telemetryIntervalMs: number;
  measuring = false;
  rtts: number[] = [];
  heartbeats = 0;
  telemetryBatches = 0;
  closesAfterWelcome = 0;
  badFrames = 0;
  fdExhausted = false;
  readonly telemetrySamples: unknown[];
  /** Verify every control-plane frame, or only the handshake's (acks are then checked for sequence only). */
  readonly verifyAll: boolean;

  constructor(urls: string[], controlPlaneKey: string, heartbeatIntervalS: number, telemetryIntervalS: number, verifyAll: boolean) {
    this.verifyAll = verifyAll;
    this.urls = urls;
    this.verify = nodeEd25519Verifier(ed25519PublicKeyFromBase64(controlPlaneKey));
    this.heartbeatIntervalMs = heartbeatIntervalS * 1000;
    this.telemetryIntervalMs = telemetryIntervalS * 1000;
    const gpu = (bus: number) => ({
      pci_address: `00000000:${bus}:00.0`,
      temperature_c: 61,
      utilization_pct: 87,
      power_watts: 243.5,
      fan_pct: 40,
      memory_used_bytes: 21_474_836_480,
    });
    this.telemetrySamples = Array.from({ length: 6 }, (_, i) => ({
      at: new Date(Date.UTC(2026, 0, 1, 0, 0, i * 10)).toISOString(),
      host: {
        cpu_utilization_pct: 35.5,
        load1: 2.1,
        memory_used_bytes: 34_359_738_368,
        disk_free_bytes: 512_000_000_000,
        uptime_s: 86_400,
      },
      devices: [gpu(1), gpu(2)],
    }));
  }
}

// Skips the signature check only (size, JSON, version, schema and sequence are still checked).
const acceptAny: FrameVerifier = () => true;

/** One simulated agent: a real signed connection with the agent's timings. */
class SimAgent {
  ws: WebSocket | null = null;
  sid = '';
  seq = 0;
  recvSeq = 0;
  ready = false;
  nextId = 1;
  // Each heartbeat and telemetry batch gets exactly one ack, in order: a FIFO of send times.
  readonly pending: number[] = [];
  timer: NodeJS.Timeout | null = null;
  nextHeartbeatAt = 0;
  nextTelemetryAt = 0;
  readonly sign: FrameSigner;
  /** The replica this agent connects to (an index into fleet.urls). */
  readonly replica: number;

  constructor(
    readonly fleet: Fleet,
    readonly machine: BenchMachine,
  ) {
    this.sign = nodeEd25519Signer(machine.privateKey);
    this.replica = fleet.assigned++ % fleet.urls.length;
  }

  connect(): Promise<boolean> {
    return new Promise((resolve) => {
      let settled = false;
      const settle = (ok: boolean) => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        resolve(ok);
      };
      const deadline = setTimeout(() => {
        this.ws?.terminate();
        settle(false);
      }, 30_000);
      const ws = new WebSocket(this.fleet.urls[this.replica] as string, { perMessageDeflate: false, maxPayload: CHANNEL_MAX_FRAME_BYTES });
      this.ws = ws;
      ws.on('error', (error: Error & { code?: string }) => {
        if (error.code === 'EMFILE' || error.code === 'ENFILE') this.fleet.fdExhausted = true;
      });
      ws.on('close', () => {
        if (this.ready) this.fleet.closesAfterWelcome += 1;
        this.ready = false;
        if (this.timer) clearTimeout(this.timer);
        settle(false);
      });
      ws.on('message', (data: Buffer) => {
        const opened = openFrame(data, this.ready && !this.fleet.verifyAll ? acceptAny : this.fleet.verify, 'control-plane');
        if (!opened.ok || opened.payload.seq !== this.recvSeq + 1) {
          this.fleet.badFrames += 1;
          ws.terminate();
          return;
        }
        const msg = opened.payload;
        this.recvSeq = msg.seq;
        if (msg.t === 'challenge') {
          this.sid = msg.sid;
          this.send({
            t: 'hello',
            machine_id: this.machine.id,
            challenge: msg.challenge,
            agent_time: new Date().toISOString(),
            agent_version: 'bench',
            commands_applied_upto: 0,
          });
        } else if (msg.t === 'welcome') {
          this.ready = true;
          this.nextId = msg.acked_upto + 1;
          const now = Date.now();
          this.nextHeartbeatAt = now + Math.random() * this.fleet.heartbeatIntervalMs;
          this.nextTelemetryAt = now + Math.random() * this.fleet.telemetryIntervalMs;
          this.schedule();
          settle(true);
        } else if (msg.t === 'ack') {
          const sentAt = this.pending.shift();
          if (sentAt !== undefined && this.fleet.measuring) this.fleet.rtts.push(performance.now() - sentAt);
        }
      });
    });
  }

  schedule(): void {
    const due = Math.min(this.nextHeartbeatAt, this.nextTelemetryAt);
    this.timer = setTimeout(() => this.tick(), Math.max(0, due - Date.now()));
  }

  tick(): void {
    if (!this.ready) return;
    const now = Date.now();
    if (now >= this.nextHeartbeatAt) {
      this.nextHeartbeatAt += this.fleet.heartbeatIntervalMs;
      this.pending.push(performance.now());
      this.send({ t: 'heartbeat', at: new Date(now).toISOString(), uptime_s: 86_400, healthy: true, problems: [], running_jobs: [] });
      if (this.fleet.measuring) this.fleet.heartbeats += 1;
    }
    if (now >= this.nextTelemetryAt) {
      this.nextTelemetryAt += this.fleet.telemetryIntervalMs;
      this.pending.push(performance.now());
      this.send({ t: 'telemetry', id: this.nextId++, samples: this.fleet.telemetrySamples });
      if (this.fleet.measuring) this.fleet.telemetryBatches += 1;
    }
    this.schedule();
  }

  send(body: Record<string, unknown>): void {
    this.seq += 1;
    this.ws?.send(signFrame({ v: 1, sid: this.sid, seq: this.seq, ...body }, this.sign));
  }

  close(): void {
    this.ready = false;
    if (this.timer) clearTimeout(this.timer);
    this.ws?.terminate();
  }
}

interface Histogram {
  buckets: Map<number, number>;
  count: number;
  /** The same per message type. */
  byType: Map<string, { buckets: Map<number, number>; count: number }>;
}

async function scrape(port: number): Promise<{ handling: Histogram; closes: number; loopDelayP99Ms: number | null }> {
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
function histogramDelta(
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

function fdLimit(): number | null {
  try {
    return Number(execSync('ulimit -n', { shell: '/bin/sh', encoding: 'utf8' }).trim()) || null;
  } catch {
    return null;
  }
}

/** RSS per bare ws socket at each level, from a server holding only sockets. */
async function rawSocketBaseline(levels: number[], log: (line: string) => void): Promise<Map<number, { rss: number; heap: number }>> {
  const server = await startServer('raw');
  const result = new Map<number, { rss: number; heap: number }>();
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
      result.set(level, perSocket);
      log(
        `bare ws server: ${level} sockets, ${(perSocket.rss / 1024).toFixed(1)} KB RSS and ${(perSocket.heap / 1024).toFixed(1)} KB heap each`,
      );
    }
  } finally {
    for (const ws of sockets) ws.terminate();
    await server.stop();
  }
  return result;
}

/**
 * The bench as `pnpm bench` runs it: one process (SQLite unless told), then, unless a replica count was given, the
 * same agents spread over three processes on one PostgreSQL database (ARK_BENCH_REPLICA_AGENTS, default
 * 6000,12000,18000: this process holds every agent's socket, and its descriptors are bounded by the hard ulimit).
 */
export async function run(options: AgentsBenchOptions = {}): Promise<AgentsBenchFigures & { onThreeReplicas?: AgentsBenchFigures }> {
  const single = await runOnce(options);
  if (options.replicas !== undefined || process.env.ARK_BENCH_REPLICAS !== undefined) return single;
  const levels = (process.env.ARK_BENCH_REPLICA_AGENTS ?? '6000,12000,18000').split(',').map((n) => Number(n.trim()));
  const onThreeReplicas = await runOnce({ ...options, replicas: 3, levels, skipRawBaseline: true });
  return { ...single, onThreeReplicas };
}

async function runOnce(options: AgentsBenchOptions = {}): Promise<AgentsBenchFigures> {
  const log = options.log ?? (() => {});
  const levels = (options.levels ?? (process.env.ARK_BENCH_AGENTS ?? '2000,5000,10000').split(',').map((n) => Number(n.trim())))
    .filter((n) => Number.isSafeInteger(n) && n > 0)
    .sort((a, b) => a - b);
  const holdS = options.holdS ?? Number(process.env.ARK_BENCH_HOLD_S ?? 15);
  const heartbeatIntervalS = options.heartbeatIntervalS ?? 15;
  const telemetryIntervalS = options.telemetryIntervalS ?? 60;
  const rampConcurrency = options.rampConcurrency ?? 64;
  const runStart = performance.now();
  const maxMs = (options.maxS ?? Number(process.env.ARK_BENCH_MAX_S ?? 170)) * 1000;
  let timeBoundAt: number | null = null;
  const limit = fdLimit();
  log(`${availableParallelism()} CPUs, ulimit -n ${limit ?? 'unknown'}; levels ${levels.join(', ')}; hold ${holdS} s`);
  if (limit !== null && levels.at(-1)! + 100 > limit) log(`warning: ulimit -n ${limit} is below the largest level; expect EMFILE`);

  const raw = options.skipRawBaseline ? new Map<number, { rss: number; heap: number }>() : await rawSocketBaseline(levels, log);

  const replicaCount = Math.max(1, Math.min(options.replicas ?? Number(process.env.ARK_BENCH_REPLICAS ?? 1), 8));
  const storeKind = replicaCount > 1 ? 'postgres' : (options.store ?? (process.env.ARK_BENCH_STORE === 'postgres' ? 'postgres' : 'sqlite'));
  const synchronous = (process.env.ARK_SQLITE_SYNCHRONOUS ?? 'FULL').toUpperCase();
  const storeLabel = storeKind === 'postgres' ? 'postgres' : `sqlite (synchronous=${synchronous})`;
  const loadStart = loadavg()[0] as number;
  log(`store: ${storeLabel}; load average ${loadStart.toFixed(2)}`);
  const database: TestDatabase | null = storeKind === 'postgres' ? await createTestDatabase() : null;
  const dataDir = mkdtempSync(join(tmpdir(), 'ark-agents-bench-'));
  const secretKey = randomBytes(32);
  const seed = randomBytes(32);
  // Every machine's key pair, derived here once; the server reads the public keys from a file (its directory).
  const largestLevel = levels.at(-1) ?? 0;
  const machines = Array.from({ length: largestLevel + 1 }, (_, i) => benchMachine(seed, i));
  const keysFile = join(dataDir, 'bench-keys.txt');
  writeFileSync(keysFile, machines.map((m) => m.publicKeyBase64).join('\n'));
  const serverEnv = {
    ARK_BENCH_KEYS_FILE: keysFile,
    HOST: '127.0.0.1',
    PORT: '0',
    ARK_DATA_DIR: dataDir,
    ARK_SECRET_KEY: secretKey.toString('hex'),
    ARK_BENCH_SEED: seed.toString('hex'),
    DATABASE_URL: database?.url ?? '',
    ARK_SQLITE_SYNCHRONOUS: synchronous,
    LOG_LEVEL: 'warn',
    // Every simulated rig dials from 127.0.0.1; real rigs each have an address of their own. With the default bound
    // (256 connections an address) the levels stopped at 256 agents.
    ARK_HTTP_MAX_CONNECTIONS_PER_ADDRESS: '0',
  };
  // One process, or several over the one PostgreSQL database (each holds the agents that connect to it).
  const servers: ChildServer[] = [];
  for (let r = 0; r < replicaCount; r++) servers.push(await startServer('app', serverEnv));
  const memoryOfAll = async () => {
    const all = await Promise.all(servers.map((s) => s.memory()));
    return { rss: all.reduce((sum, m) => sum + m.rss, 0), heapUsed: all.reduce((sum, m) => sum + m.heapUsed, 0), each: all };
  };
  const agents: SimAgent[] = [];
  const figures: AgentsLevelFigures[] = [];
  let fdExhaustedAt: number | null = null;
  try {
    const verifyAll = options.verifyAll ?? process.env.ARK_BENCH_VERIFY === 'all';
    // The key agents pin: the same settings row the server reads (created by whichever side comes first).
    const store = openStore({ databaseUrl: database?.url ?? null, sqlitePath: join(dataDir, 'ark.sqlite') });
    const controlPlaneKey = (await loadControlPlaneIdentity(store, secretKey)).publicKeyBase64;
    await store.close();
    const fleet = new Fleet(
      servers.map((s) => `ws://127.0.0.1:${s.port}${CHANNEL_PATH}?v=1`),
      controlPlaneKey,
      heartbeatIntervalS,
      telemetryIntervalS,
      verifyAll,
    );

    // One agent first, so the gateway has started (identity, timers) before the baseline.
    for (let r = 0; r < servers.length; r++) {
      const warm = new SimAgent(fleet, machines[largestLevel] as BenchMachine);
      if (!(await warm.connect())) throw new Error('the warm-up agent could not connect');
      warm.close();
      await sleep(200);
    }
    fleet.assigned = 0;
    await sleep(500);
    const baseline = await memoryOfAll();

    for (const level of levels) {
      const rampStart = performance.now();
      let next = agents.length;
      while (next < level) agents.push(new SimAgent(fleet, machines[next++] as BenchMachine));
      let cursor = figures.length === 0 ? 0 : figures[figures.length - 1]!.agents;
      // Leave time for this level's hold and the shutdown.
      const rampDeadline = runStart + maxMs - (holdS + 10) * 1000;
      const workers = Array.from({ length: rampConcurrency }, async () => {
        while (cursor < level && !fleet.fdExhausted && performance.now() < rampDeadline) {
          const agent = agents[cursor++] as SimAgent;
          await agent.connect();
        }
      });
      await Promise.all(workers);
      const rampS = (performance.now() - rampStart) / 1000;
      const connected = agents.filter((a) => a.ready).length;
      if (fleet.fdExhausted) {
        fdExhaustedAt = connected;
        log(`descriptors ran out (EMFILE) at ${connected} agents`);
      }
      if (cursor < level && !fleet.fdExhausted) {
        timeBoundAt = connected;
        log(`the run's time bound stopped the ramp at ${connected} agents`);
      }
      log(`${level} agents: ${connected} connected in ${rampS.toFixed(1)} s`);

      await sleep(2_000);
      const memory = await memoryOfAll();
      const befores = await Promise.all(servers.map((s) => scrape(s.port)));
      const before = befores[0] as Awaited<ReturnType<typeof scrape>>;
      fleet.rtts = [];
      fleet.heartbeats = 0;
      fleet.telemetryBatches = 0;
      const closesBefore = fleet.closesAfterWelcome;
      const cpusBefore = servers.map((s) => cpuMs(s.child.pid as number));
      const agentsCpuBefore = process.cpuUsage();
      const holdStart = performance.now();
      fleet.measuring = true;
      await sleep(holdS * 1000);
      fleet.measuring = false;
      const holdMs = performance.now() - holdStart;
      const cpus = servers.map((s, r) => cpuMs(s.child.pid as number) - (cpusBefore[r] as number));
      const serverCpu = cpus.reduce((sum, c) => sum + c, 0);
      const agentsCpu = process.cpuUsage(agentsCpuBefore);
      const afters = await Promise.all(servers.map((s) => scrape(s.port)));
      const after = afters[0] as Awaited<ReturnType<typeof scrape>>;
      const perReplica = servers.map((_, r) => {
        const b = befores[r] as Awaited<ReturnType<typeof scrape>>;
        const a = afters[r] as Awaited<ReturnType<typeof scrape>>;
        const frames = a.handling.count - b.handling.count;
        const cpu = cpus[r] as number;
        return {
          agents: agents.filter((agent) => agent.ready && agent.replica === r).length,
          frames,
          cpuPctOfCore: Math.round((1000 * cpu) / holdMs) / 10,
          cpuUsPerFrame: frames > 0 ? Math.round((1000 * cpu) / frames) : null,
          ...histogramDelta(b.handling, a.handling),
          rssMb: Math.round((memory.each[r]?.rss ?? 0) / 1_048_576),
        };
      });
      const framesHandled = perReplica.reduce((sum, r) => sum + r.frames, 0);
      // Several replicas: the worst replica's p99 and share within 50 ms.
      const p99s = perReplica.map((r) => r.p99Ms);
      const p99Ms = p99s.includes(null) ? null : Math.max(...(p99s as number[]));
      const shares = perReplica.map((r) => r.within50Pct);
      const within50Pct = shares.includes(null) ? null : Math.min(...(shares as number[]));
      const rtts = fleet.rtts.sort((a, b) => a - b);
      const rssPerAgent = (memory.rss - baseline.rss) / connected;
      const heapPerAgent = (memory.heapUsed - baseline.heapUsed) / connected;
      const rawPerSocket = raw.get(level) ?? null;
      const closes = fleet.closesAfterWelcome - closesBefore + afters.reduce((sum, a, r) => sum + a.closes - (befores[r]?.closes ?? 0), 0);
      const level_: AgentsLevelFigures = {
        agents: level,
        connected,
        rampS: Math.round(rampS * 10) / 10,
        handshakesPerS: Math.round((connected - (figures.at(-1)?.connected ?? 0)) / rampS),
        heartbeats: fleet.heartbeats,
        telemetryBatches: fleet.telemetryBatches,
        serverHandlingP99Ms: p99Ms,
        serverWithin50MsPct: within50Pct === null ? null : Math.round(within50Pct * 100) / 100,
        serverHandlingP99MsByType: Object.fromEntries(
          [...after.handling.byType].map(([type, entry]) => [
            type,
            histogramDelta(before.handling.byType.get(type) ?? { buckets: new Map(), count: 0 }, entry).p99Ms,
          ]),
        ),
        eventLoopDelayP99Ms: after.loopDelayP99Ms === null ? null : Math.round(after.loopDelayP99Ms * 10) / 10,
        rttP50Ms: round1(percentile(rtts, 50)),
        rttP99Ms: round1(percentile(rtts, 99)),
        rttMaxMs: round1(rtts.at(-1) ?? null),
        closes,
        serverCpuPctOfCore: Math.round((1000 * serverCpu) / holdMs) / 10,
        serverCpuUsPerFrame: framesHandled > 0 ? Math.round((1000 * serverCpu) / framesHandled) : null,
        agentsCpuPctOfCore: Math.round((agentsCpu.user + agentsCpu.system) / holdMs) / 10,
        serverRssMb: Math.round(memory.rss / 1_048_576),
        rssPerAgentBytes: Math.round(rssPerAgent),
        heapPerAgentBytes: Math.round(heapPerAgent),
        rawSocketRssBytes: rawPerSocket === null ? null : Math.round(rawPerSocket.rss),
        beyondRawSocketBytes: rawPerSocket === null ? null : Math.round(rssPerAgent - rawPerSocket.rss),
        rawSocketHeapBytes: rawPerSocket === null ? null : Math.round(rawPerSocket.heap),
        beyondRawSocketHeapBytes: rawPerSocket === null ? null : Math.round(heapPerAgent - rawPerSocket.heap),
        replicas: perReplica.map(({ agents: n, frames, cpuPctOfCore, cpuUsPerFrame, p99Ms: p99, rssMb }) => ({
          agents: n,
          frames,
          cpuPctOfCore,
          cpuUsPerFrame,
          p99Ms: p99,
          rssMb,
        })),
        held: connected === level && closes === 0 && fleet.badFrames === 0 && within50Pct !== null && within50Pct >= 99,
        heldEndToEnd: false,
      };
      level_.heldEndToEnd = level_.held && level_.rttP99Ms !== null && level_.rttP99Ms < 50;
      figures.push(level_);
      log(
        `${level} agents: ${level_.heartbeats} heartbeats, ${level_.telemetryBatches} telemetry batches in ${holdS} s; ` +
          `server p99 <= ${level_.serverHandlingP99Ms} ms (${level_.serverWithin50MsPct}% within 50 ms; ${Object.entries(
            level_.serverHandlingP99MsByType,
          )
            .filter(([, v]) => v !== null)
            .map(([t, v]) => `${t} ${v}`)
            .join(', ')}), event-loop p99 ${level_.eventLoopDelayP99Ms} ms; ` +
          `agent round trip p50/p99/max ${level_.rttP50Ms}/${level_.rttP99Ms}/${level_.rttMaxMs} ms; ` +
          `server CPU ${level_.serverCpuPctOfCore}% of a core (${level_.serverCpuUsPerFrame} us/frame), agents CPU ${level_.agentsCpuPctOfCore}%; ` +
          `RSS ${level_.serverRssMb} MB, ${(level_.rssPerAgentBytes / 1024).toFixed(1)} KB/agent` +
          (level_.beyondRawSocketBytes === null ? '' : ` (${(level_.beyondRawSocketBytes / 1024).toFixed(1)} KB beyond a bare socket)`) +
          `, heap ${(level_.heapPerAgentBytes / 1024).toFixed(1)} KB/agent` +
          (level_.beyondRawSocketHeapBytes === null
            ? ''
            : ` (${(level_.beyondRawSocketHeapBytes / 1024).toFixed(1)} KB beyond a bare socket)`) +
          (replicaCount > 1
            ? `; per replica: ${level_.replicas.map((r) => `${r.agents} agents, ${r.cpuUsPerFrame} us/frame, p99 <= ${r.p99Ms} ms`).join(' | ')}`
            : '') +
          `; closes ${closes}; ${level_.held ? 'HELD' : 'NOT HELD'}${level_.heldEndToEnd ? ' (end to end too)' : ''}`,
      );
      if (!level_.held || fleet.fdExhausted || timeBoundAt !== null) break;
    }
  } finally {
    for (const agent of agents) agent.close();
    for (const s of servers) await s.stop();
    rmSync(dataDir, { recursive: true, force: true });
    await database?.drop();
  }

  const held = figures.filter((f) => f.held);
  const largestHeld = held.length > 0 ? Math.max(...held.map((f) => f.agents)) : null;
  const heldEndToEnd = figures.filter((f) => f.heldEndToEnd);
  const largestHeldEndToEnd = heldEndToEnd.length > 0 ? Math.max(...heldEndToEnd.map((f) => f.agents)) : null;
  const target = figures.find((f) => f.agents === 10_000);
  const largest = figures.at(-1);
  return {
    store: storeLabel,
    replicas: replicaCount,
    loadAverage: { start: Math.round(loadStart * 100) / 100, end: Math.round((loadavg()[0] as number) * 100) / 100 },
    cpus: availableParallelism(),
    fdLimit: limit,
    holdS,
    levels: figures,
    largestHeld,
    largestHeldEndToEnd,
    fdExhaustedAt,
    timeBoundAt,
    budgets: { p99Ms: 50, beyondRawSocketBytesMax: 10 * 1024, targetAgents: 10_000 },
    withinBudget: {
      p99AtTarget: target ? target.held : null,
      memory: largest?.beyondRawSocketBytes == null ? null : largest.beyondRawSocketBytes <= 10 * 1024,
    },
  };
}

function round1(value: number | null): number | null {
  return value === null ? null : Math.round(value * 10) / 10;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const figures = await run({ log: (line) => process.stderr.write(`${line}\n`) });
  process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
  process.stdout.write(
    `largest N held: ${figures.largestHeld ?? 'none'} (server-side p99 < 50 ms); end to end: ${figures.largestHeldEndToEnd ?? 'none'}; load average ${figures.loadAverage.start} -> ${figures.loadAverage.end}\n`,
  );
}
