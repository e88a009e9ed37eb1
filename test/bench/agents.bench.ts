// How many agents the control plane holds, on one process or several replicas. Child processes run the real
// control-plane app (agents-server.ts: store, gateway, every area's channel handlers), and K client processes
// (agents-client.ts, K from ARK_BENCH_CLIENTS, default one per 12,000 agents) hold the simulated agents
// (sim-agent.ts): each a real WebSocket with the challenge handshake and signed frames, a heartbeat every 15 s and a
// telemetry batch (6 samples, 2 GPUs) every 60 s, each at its own random phase; every control-plane frame is checked
// as a real agent checks it. Spreading the agents over clients keeps the bench's own descriptors (ulimit -n per
// process) and event loops from being the limit.
//
// Jobs metering: a share of the machines (ARK_BENCH_METERED, default 20%: one machine in five; or a count, spread
// evenly) are real rows of the machines table with a RUNNING job each (metered-jobs.ts: enrolled, live, listed, the
// renter's money held through the ledger), and their agents list the job in their heartbeats and send a meter
// receipt every ARK_BENCH_RECEIPT_S (default 30 s, as real agents; smaller raises the rate), which the gateway's
// real meter_receipt handlers charge. The others stay a key file (agents-server.ts's directory): seeding 50,000 rows
// and ledger holds would take minutes per run, and an idle machine's frames cost the same lookups either way but
// the heartbeat's row read. Receipts acknowledged per replica (committed) are counted by the agents; the store's
// job rows say how many were applied and whether any was refused (receipt_refused events: should be 0). Telemetry:
// every agent a batch of six samples every ARK_BENCH_TELEMETRY_S (default 60 s, as real agents), stamped at the send
// time so the control plane stores it.
//
// Levels ramp up in one run (ARK_BENCH_AGENTS, default 2000,5000,10000): connect the new agents (64 handshakes in
// flight over all clients), then hold for ARK_BENCH_HOLD_S (default 15: one heartbeat each) at the real intervals
// (no compressed timeline) and measure:
//   - p99 frame handling, server side: the gateway's histogram (arrival to acknowledgement sent), over the hold;
//   - p99 round trip, agent side: heartbeat, telemetry or receipt sent -> its ack (includes both event loops);
//   - the server's event-loop delay p99 and CPU per frame handled (per replica and overall), the clients' CPU;
//   - meter receipts acknowledged per second, per replica and in total;
//   - memory per agent: the server's RSS after a forced GC, minus its RSS before any agent, over N; and the same for
//     a bare ws server holding N sockets with the gateway's options (measured first, in its own child, from this
//     process), so the figure "beyond the raw socket" is a difference within one run.
// A level is held when every agent is connected, none was closed, and 99% of frames were handled within 50 ms server
// side; held end to end when the agents' round-trip p99 is under 100 ms too (issue 26 item 5). This machine has 2
// cores shared by the servers, the clients and anything else running (the load average is reported), so the round
// trip is an upper bound that includes the clients' own lag and the OS scheduler's.
// ARK_BENCH_VERIFY=all verifies every ack's signature too (more CPU taken from the servers' cores).
// SQLite by default (ARK_SQLITE_SYNCHRONOUS, default FULL as in production); ARK_BENCH_STORE=postgres for a fresh
// database on the local server. Replicas: ARK_BENCH_REPLICAS=3 starts three control-plane processes on one
// PostgreSQL database and spreads the agents over them round robin. Without a count, run() (what `pnpm bench` calls)
// does the single process first and then three replicas at ARK_BENCH_REPLICA_AGENTS (default 6000,12000,18000), and
// prints both side by side (`comparison`). Each run is bounded by ARK_BENCH_MAX_S (default 170 s): a ramp that would
// overrun stops, and the level is reported with the agents it reached. EMFILE in a client ends the ramp. A level not
// held ends the run too, unless ARK_BENCH_CONTINUE=1 (to find where memory or descriptors stop it beyond the CPU).
// Run: pnpm exec tsx test/bench/agents.bench.ts   (ARK_BENCH_AGENTS=1000,2000 ARK_BENCH_HOLD_S=20 ARK_BENCH_RECEIPT_S=5)
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { loadControlPlaneIdentity } from '@ark/control-plane/gateway/identity';
import { openStore } from '@ark/control-plane/store/db';
import { verifyLedger } from '@ark/control-plane/store/ledger';
import { CHANNEL_PATH } from '@ark/shared';
import { createTestDatabase, type TestDatabase } from '../harness/postgres.js';
import type { ClientInit, ClientReport } from './agents-client.js';
import {
  type AgentsBenchFigures,
  type AgentsLevelFigures,
  type AtLargest,
  atLargest,
  describeLevel,
  levelFigures,
} from './agents-figures.js';
import {
  type Child,
  type ChildServer,
  cpuMs,
  fdLimit,
  type RawBaseline,
  rawSocketBaseline,
  scrape,
  sleep,
  startClient,
  startServer,
} from './agents-probe.js';
import { benchMachine } from './agents-server.js';
import { type FloorLoad, floorFrames } from './bench-floor.js';
import { meterCounts, seedMeteredFleet } from './metered-jobs.js';
import { type FleetSettings, type MeteredJob, simTelemetrySamples } from './sim-agent.js';

export type { AgentsBenchFigures, AgentsLevelFigures, AtLargest, ReplicaFigures } from './agents-figures.js';

export interface AgentsBenchOptions {
  /** Agent counts, ascending (default from ARK_BENCH_AGENTS, else 2000,5000,10000). */
  levels?: number[];
  /** Seconds held at each level (default from ARK_BENCH_HOLD_S, else 15). */
  holdS?: number;
  heartbeatIntervalS?: number;
  /** Seconds between an agent's telemetry batches (default from ARK_BENCH_TELEMETRY_S, else 60 as real agents). */
  telemetryIntervalS?: number;
  /** Seconds between a metered agent's receipts (default from ARK_BENCH_RECEIPT_S, else 30). */
  receiptIntervalS?: number;
  /** Metered machines: "20%" of each level (the default, from ARK_BENCH_METERED) or a count over the largest level. */
  metered?: string;
  /** Client processes holding the agents (default from ARK_BENCH_CLIENTS, else one per 12,000 agents). */
  clients?: number;
  /** Handshakes in flight during the ramp, over all clients. */
  rampConcurrency?: number;
  /** The whole run's bound in seconds (default from ARK_BENCH_MAX_S, else 170): a ramp that would overrun stops. */
  maxS?: number;
  /** Go on to the next level after one not held (default from ARK_BENCH_CONTINUE=1): where memory or descriptors stop it. */
  continuePastMiss?: boolean;
  /** Skip the bare-socket baseline. */
  skipRawBaseline?: boolean;
  /** Seconds the bare server's CPU per frame is measured at each level (default from ARK_BENCH_FLOOR_S, else 10; 0: not). */
  floorS?: number;
  /** Verify every control-plane frame in the agents (default: only the handshake's; from ARK_BENCH_VERIFY=all). */
  verifyAll?: boolean;
  /** The control plane's store (default from ARK_BENCH_STORE, else sqlite); sqlite uses ARK_SQLITE_SYNCHRONOUS (FULL). */
  store?: 'sqlite' | 'postgres';
  /** Control-plane processes over one PostgreSQL database (default from ARK_BENCH_REPLICAS, else 1); > 1 implies postgres. */
  replicas?: number;
  log?: (line: string) => void;
}

/**
 * The bench as `pnpm bench` runs it: one process (SQLite unless told), then, unless a replica count was given, the
 * agents spread over three processes on one PostgreSQL database (ARK_BENCH_REPLICA_AGENTS, default 6000,12000,18000),
 * and `comparison`: each run's figures at its largest held level, side by side.
 */
export async function run(
  options: AgentsBenchOptions = {},
): Promise<AgentsBenchFigures & { onThreeReplicas?: AgentsBenchFigures; comparison?: { single: AtLargest; threeReplicas: AtLargest } }> {
  const single = await runOnce(options);
  if (options.replicas !== undefined || process.env.ARK_BENCH_REPLICAS !== undefined) return single;
  const levels = (process.env.ARK_BENCH_REPLICA_AGENTS ?? '6000,12000,18000').split(',').map((n) => Number(n.trim()));
  const onThreeReplicas = await runOnce({ ...options, replicas: 3, levels, skipRawBaseline: true });
  return { comparison: { single: atLargest(single), threeReplicas: atLargest(onThreeReplicas) }, ...single, onThreeReplicas };
}

/** Which agent indices are metered: every `stride`-th below the largest level ("20%": stride 5; a count: spread). */
function meteredIndices(spec: string, largest: number): number[] {
  const share = spec.trim().endsWith('%');
  const value = Number(spec.trim().replace('%', ''));
  if (!Number.isFinite(value) || value <= 0) return [];
  const stride = share ? Math.max(1, Math.round(100 / value)) : Math.max(1, Math.floor(largest / value));
  const count = share ? Math.ceil(largest / stride) : Math.min(value, largest);
  return Array.from({ length: count }, (_, k) => k * stride).filter((i) => i < largest);
}

async function runOnce(options: AgentsBenchOptions = {}): Promise<AgentsBenchFigures> {
  const log = options.log ?? (() => {});
  const levels = (options.levels ?? (process.env.ARK_BENCH_AGENTS ?? '2000,5000,10000').split(',').map((n) => Number(n.trim())))
    .filter((n) => Number.isSafeInteger(n) && n > 0)
    .sort((a, b) => a - b);
  const holdS = options.holdS ?? Number(process.env.ARK_BENCH_HOLD_S ?? 15);
  const receiptIntervalS = options.receiptIntervalS ?? Number(process.env.ARK_BENCH_RECEIPT_S ?? 30);
  const rampConcurrency = options.rampConcurrency ?? 64;
  const continuePastMiss = options.continuePastMiss ?? process.env.ARK_BENCH_CONTINUE === '1';
  const maxMs = (options.maxS ?? Number(process.env.ARK_BENCH_MAX_S ?? 170)) * 1000;
  let timeBoundAt: number | null = null;
  const largest = levels.at(-1) ?? 0;
  const clientCount = Math.max(1, options.clients ?? Number(process.env.ARK_BENCH_CLIENTS ?? Math.ceil(largest / 12_000)));
  const limit = fdLimit();
  log(
    `${availableParallelism()} CPUs, ulimit -n ${limit ?? 'unknown'}; levels ${levels.join(', ')}; hold ${holdS} s; ${clientCount} client(s)`,
  );
  if (limit !== null && largest / clientCount + 100 > limit) log(`warning: ulimit -n ${limit} is below a client's share; expect EMFILE`);

  const replicaCount = Math.max(1, Math.min(options.replicas ?? Number(process.env.ARK_BENCH_REPLICAS ?? 1), 8));
  // The bare sockets are opened from this process: skipped on replicas, and past this process's descriptors.
  const skipRaw = options.skipRawBaseline ?? (replicaCount > 1 || (limit !== null && largest + 100 > limit));
  // Machines 0 .. largest - 1, and one more for the warm-up. Metered ones are rows: their line is empty.
  const metered = meteredIndices(options.metered ?? process.env.ARK_BENCH_METERED ?? '20%', largest);
  const heartbeatIntervalS = options.heartbeatIntervalS ?? 15;
  const telemetryIntervalS = options.telemetryIntervalS ?? Number(process.env.ARK_BENCH_TELEMETRY_S ?? 60);
  // The floor (bench-floor.ts) answers the frames each level's agents will send: as many a second, as many large.
  const floorS = options.floorS ?? Number(process.env.ARK_BENCH_FLOOR_S ?? 10);
  const telemetrySizedPerS = (level: number) => level / telemetryIntervalS + metered.filter((i) => i < level).length / receiptIntervalS;
  const floor =
    floorS > 0
      ? {
          holdS: floorS,
          loadOf: (level: number): FloorLoad => {
            const framesPerS = level / heartbeatIntervalS + telemetrySizedPerS(level);
            return { framesPerS, largeShare: telemetrySizedPerS(level) / framesPerS, ...floorFrames(simTelemetrySamples(Date.now())) };
          },
        }
      : undefined;
  const raw = skipRaw ? new Map<number, RawBaseline>() : await rawSocketBaseline(levels, log, floor);
  // The time bound is the app's: it starts after the bare server's baseline.
  const runStart = performance.now();

  const storeKind = replicaCount > 1 ? 'postgres' : (options.store ?? (process.env.ARK_BENCH_STORE === 'postgres' ? 'postgres' : 'sqlite'));
  const synchronous = (process.env.ARK_SQLITE_SYNCHRONOUS ?? 'FULL').toUpperCase();
  const storeLabel = storeKind === 'postgres' ? 'postgres' : `sqlite (synchronous=${synchronous})`;
  const loadStart = loadavg()[0] as number;
  log(`store: ${storeLabel}; load average ${loadStart.toFixed(2)}`);
  const database: TestDatabase | null = storeKind === 'postgres' ? await createTestDatabase() : null;
  const dataDir = mkdtempSync(join(tmpdir(), 'ark-agents-bench-'));
  const secretKey = randomBytes(32);
  const seed = randomBytes(32);
  const meteredSet = new Set(metered);
  const keysFile = join(dataDir, 'bench-keys.txt');
  const keyLines: string[] = [];
  for (let i = 0; i <= largest; i++) keyLines.push(meteredSet.has(i) ? '' : benchMachine(seed, i).publicKeyBase64);
  writeFileSync(keysFile, keyLines.join('\n'));
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
  const clients: Child[] = [];
  const figures: AgentsLevelFigures[] = [];
  let fdExhaustedAt: number | null = null;
  let meteredSeedS = 0;
  let ledgerVerifies: boolean | null = null;
  // The bench's own handle on the store: the identity agents pin, the metered rows, and the receipt counts.
  let store: ReturnType<typeof openStore> | null = null;
  try {
    for (let r = 0; r < replicaCount; r++) servers.push(await startServer('app', serverEnv));
    const memoryOfAll = async () => {
      const all = await Promise.all(servers.map((s) => s.memory()));
      return { rss: all.reduce((sum, m) => sum + m.rss, 0), heapUsed: all.reduce((sum, m) => sum + m.heapUsed, 0), each: all };
    };
    store = openStore({ databaseUrl: database?.url ?? null, sqlitePath: join(dataDir, 'ark.sqlite') });
    const controlPlaneKey = (await loadControlPlaneIdentity(store, secretKey)).publicKeyBase64;
    const seedStarted = performance.now();
    const fleetRows = await seedMeteredFleet(store, (i) => benchMachine(seed, i), metered, receiptIntervalS * 1000);
    meteredSeedS = Math.round((performance.now() - seedStarted) / 100) / 10;
    log(`${metered.length} metered machines with RUNNING jobs seeded in ${meteredSeedS} s`);
    const counts = () => meterCounts(store as ReturnType<typeof openStore>, fleetRows.renterAccountId);

    const settings: FleetSettings = {
      urls: servers.map((s) => `ws://127.0.0.1:${s.port}${CHANNEL_PATH}?v=1`),
      controlPlaneKey,
      heartbeatIntervalMs: heartbeatIntervalS * 1000,
      telemetryIntervalMs: telemetryIntervalS * 1000,
      receiptIntervalMs: receiptIntervalS * 1000,
      verifyAll: options.verifyAll ?? process.env.ARK_BENCH_VERIFY === 'all',
    };
    for (let k = 0; k < clientCount; k++) {
      const jobs: Record<number, MeteredJob> = {};
      for (const [index, job] of fleetRows.jobs) if (index % clientCount === k) jobs[index] = job;
      const init: ClientInit = {
        type: 'init',
        settings,
        seedHex: seed.toString('hex'),
        client: k,
        clients: clientCount,
        agents: largest,
        jobs,
      };
      clients.push(await startClient(init as unknown as Record<string, unknown>));
    }
    const warmed = await (clients[0] as Child).ask<{ ok: boolean }>({ type: 'warm', index: largest }, 'warmed');
    if (!warmed.ok) throw new Error('the warm-up agent could not connect');
    await sleep(500);
    const baseline = await memoryOfAll();

    for (const level of levels) {
      const rampStart = performance.now();
      // Leave time for this level's hold and the shutdown.
      const rampDeadline = runStart + maxMs - (holdS + 10) * 1000;
      const ramps = await Promise.all(
        clients.map((c) =>
          c.ask<{ connected: number; fdExhausted: boolean }>(
            {
              type: 'connect',
              upto: level,
              concurrency: Math.ceil(rampConcurrency / clientCount),
              deadline: Date.now() + (rampDeadline - performance.now()),
            },
            'connected',
          ),
        ),
      );
      const rampS = (performance.now() - rampStart) / 1000;
      const connectedAtRamp = ramps.reduce((sum, r) => sum + r.connected, 0);
      const fdExhausted = ramps.some((r) => r.fdExhausted);
      if (fdExhausted) {
        fdExhaustedAt = connectedAtRamp;
        log(`descriptors ran out (EMFILE) at ${connectedAtRamp} agents`);
      } else if (connectedAtRamp < level && performance.now() >= rampDeadline) {
        timeBoundAt = connectedAtRamp;
        log(`the run's time bound stopped the ramp at ${connectedAtRamp} agents`);
      }
      log(`${level} agents: ${connectedAtRamp} connected in ${rampS.toFixed(1)} s`);

      await sleep(2_000);
      const memory = await memoryOfAll();
      const befores = await Promise.all(servers.map((s) => scrape(s.port)));
      const meterBefore = await counts();
      const cpusBefore = servers.map((s) => cpuMs(s.child.pid as number));
      const clientCpuBefore = clients.reduce((sum, c) => sum + cpuMs(c.child.pid as number), 0);
      await Promise.all(clients.map((c) => c.ask({ type: 'hold', on: true }, 'holding')));
      const holdStart = performance.now();
      log(`${level} agents: holding for ${holdS} s`);
      // With ARK_BENCH_PROFILE_DIR set, each server profiles the hold alone (agents-server.ts).
      for (const server of servers) server.child.send({ type: 'profile', on: true });
      await sleep(holdS * 1000);
      for (const server of servers) server.child.send({ type: 'profile', on: false });
      const reports = await Promise.all(clients.map((c) => c.ask<ClientReport>({ type: 'hold', on: false }, 'report')));
      const holdMs = performance.now() - holdStart;
      const cpus = servers.map((s, r) => cpuMs(s.child.pid as number) - (cpusBefore[r] as number));
      const clientCpu = clients.reduce((sum, c) => sum + cpuMs(c.child.pid as number), 0) - clientCpuBefore;
      const afters = await Promise.all(servers.map((s) => scrape(s.port)));
      const meterAfter = await counts();
      figures.push(
        levelFigures({
          level,
          rampS,
          previousConnected: figures.at(-1)?.connected ?? 0,
          reports,
          befores,
          afters,
          cpus,
          clientCpu,
          holdMs,
          memory,
          baseline,
          raw: raw.get(level) ?? null,
          meterBefore,
          meterAfter,
          metered: metered.filter((i) => i < level).length,
        }),
      );
      const f = figures.at(-1) as AgentsLevelFigures;
      log(describeLevel(f, holdS, replicaCount));
      if ((!f.held && !continuePastMiss) || fdExhausted || timeBoundAt !== null) break;
    }
    // The charges the receipts posted kept the ledger whole.
    ledgerVerifies = (await verifyLedger(store)).ok;
    log(`ledger verifies after the receipts: ${ledgerVerifies}`);
  } finally {
    for (const c of clients) await c.stop();
    for (const s of servers) await s.stop();
    await store?.close();
    rmSync(dataDir, { recursive: true, force: true });
    await database?.drop();
  }

  const held = figures.filter((f) => f.held);
  const heldEndToEnd = figures.filter((f) => f.heldEndToEnd);
  const target = figures.find((f) => f.agents === 10_000);
  const last = figures.at(-1);
  return {
    store: storeLabel,
    replicas: replicaCount,
    clients: clientCount,
    loadAverage: { start: Math.round(loadStart * 100) / 100, end: Math.round((loadavg()[0] as number) * 100) / 100 },
    cpus: availableParallelism(),
    fdLimit: limit,
    holdS,
    receiptIntervalS,
    meteredSeedS,
    ledgerVerifies,
    levels: figures,
    largestHeld: held.length > 0 ? Math.max(...held.map((f) => f.agents)) : null,
    largestHeldEndToEnd: heldEndToEnd.length > 0 ? Math.max(...heldEndToEnd.map((f) => f.agents)) : null,
    fdExhaustedAt,
    timeBoundAt,
    budgets: { p99Ms: 50, rttP99Ms: 100, beyondRawSocketBytesMax: 10 * 1024, targetAgents: 10_000 },
    withinBudget: {
      p99AtTarget: target ? target.held : null,
      memory: last?.beyondRawSocketBytes == null ? null : last.beyondRawSocketBytes <= 10 * 1024,
    },
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const figures = await run({ log: (line) => process.stderr.write(`${line}\n`) });
  process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
  process.stdout.write(
    `largest N held: ${figures.largestHeld ?? 'none'} (server-side p99 < 50 ms); end to end: ${figures.largestHeldEndToEnd ?? 'none'}; load average ${figures.loadAverage.start} -> ${figures.loadAverage.end}\n`,
  );
}
