// The figures of agents.bench.ts: their shapes, one level's figures from what the clients and servers reported, the
// level's log line, and each run's figures at its largest held level (what `pnpm bench` compares across runs).
import type { ClientReport } from './agents-client.js';
import { histogramDelta, percentile, type RawBaseline, type scrape } from './agents-probe.js';
import type { MeterCounts } from './metered-jobs.js';

export interface ReplicaFigures {
  agents: number;
  frames: number;
  cpuPctOfCore: number;
  cpuUsPerFrame: number | null;
  p99Ms: number | null;
  rssMb: number;
  /** Meter receipts it acknowledged (committed) per second over the hold. */
  receiptsPerS: number;
}

export interface AgentsLevelFigures {
  agents: number;
  connected: number;
  rampS: number;
  handshakesPerS: number;
  heartbeats: number;
  telemetryBatches: number;
  /** Server side: upper bound of the histogram bucket holding the 99th percentile, over the hold (worst replica). */
  serverHandlingP99Ms: number | null;
  /** Share of frames handled within 50 ms, server side (worst replica). */
  serverWithin50MsPct: number | null;
  /** Server-side p99 bucket bound per message type (ms), first replica. */
  serverHandlingP99MsByType: Record<string, number | null>;
  eventLoopDelayP99Ms: number | null;
  rttP50Ms: number | null;
  rttP99Ms: number | null;
  rttMaxMs: number | null;
  closes: number;
  /** The servers' CPU over the hold, in % of one core, and per frame handled (all replicas). */
  serverCpuPctOfCore: number;
  serverCpuUsPerFrame: number | null;
  /**
   * The floor under serverCpuUsPerFrame: a bare ws server's CPU per frame answering the same sockets at the same
   * load (bench-floor.ts), measured in this run; null when not measured (replicas, or ARK_BENCH_FLOOR_S=0).
   */
  floorCpuUsPerFrame: number | null;
  /** serverCpuUsPerFrame over the floor: how many bare sockets' reads and writes a frame costs, on any machine. */
  serverCpuOverFloor: number | null;
  /** The client processes' (the agents') CPU over the hold, in % of one core. */
  agentsCpuPctOfCore: number;
  /** Meter receipts over the hold: sent, acknowledged, acknowledged per second; applied in the store; refusals so far. */
  receipts: {
    metered: number;
    sent: number;
    acked: number;
    perS: number;
    appliedInStore: number;
    refusals: number;
    jobsNotRunning: number;
  };
  serverRssMb: number;
  rssPerAgentBytes: number;
  heapPerAgentBytes: number;
  rawSocketRssBytes: number | null;
  /** RSS per agent minus RSS per bare socket: the budget's "beyond the raw socket" (RSS moves in pages: noisy). */
  beyondRawSocketBytes: number | null;
  rawSocketHeapBytes: number | null;
  /** The same on the JS heap (steadier than RSS). */
  beyondRawSocketHeapBytes: number | null;
  /** Per replica (one entry on a single process). */
  replicas: ReplicaFigures[];
  /** All connected, no closes, and 99% of frames handled within 50 ms server side (the budget's measure). */
  held: boolean;
  /** The same with the agents' round trip p99 under 100 ms too (includes the clients and OS scheduling). */
  heldEndToEnd: boolean;
}

export interface AgentsBenchFigures {
  store: string;
  /** Control-plane processes the agents were spread over, and client processes holding them. */
  replicas: number;
  clients: number;
  /** The machine's 1-minute load average when the run started and ended: other work competing for the 2 cores. */
  loadAverage: { start: number; end: number };
  cpus: number;
  fdLimit: number | null;
  holdS: number;
  receiptIntervalS: number;
  /** Seconds to seed the metered machines' rows and jobs (not measured below). */
  meteredSeedS: number;
  /** The ledger verified after the last level (every metered charge balanced); null when the run failed before. */
  ledgerVerifies: boolean | null;
  levels: AgentsLevelFigures[];
  /** Largest level held (all connected, no closes, server p99 < 50 ms), or null. */
  largestHeld: number | null;
  /** Largest level whose agent round trip p99 was under 100 ms as well. */
  largestHeldEndToEnd: number | null;
  /** Set when descriptors ran out: the number of agents connected at that point. */
  fdExhaustedAt: number | null;
  /** Set when the time bound stopped a ramp: the number of agents connected at that point. */
  timeBoundAt: number | null;
  budgets: { p99Ms: number; rttP99Ms: number; beyondRawSocketBytesMax: number; targetAgents: number };
  withinBudget: { p99AtTarget: boolean | null; memory: boolean | null };
}

/** One run's figures at its largest held level (else its last): what `pnpm bench` compares. */
export interface AtLargest {
  store: string;
  agents: number | null;
  agentsPerReplica: number[];
  held: boolean;
  serverP99Ms: number | null;
  rttP99Ms: number | null;
  cpuUsPerFrame: number | null;
  /** cpuUsPerFrame over the bare socket's in the same run (single process only). */
  cpuOverFloor: number | null;
  cpuUsPerFramePerReplica: Array<number | null>;
  receiptsPerS: number;
  receiptsPerSPerReplica: number[];
}

export function atLargest(figures: AgentsBenchFigures): AtLargest {
  const level = [...figures.levels].reverse().find((f) => f.held) ?? figures.levels.at(-1);
  return {
    store: `${figures.store} x${figures.replicas}`,
    agents: level?.connected ?? null,
    agentsPerReplica: level?.replicas.map((r) => r.agents) ?? [],
    held: level?.held ?? false,
    serverP99Ms: level?.serverHandlingP99Ms ?? null,
    rttP99Ms: level?.rttP99Ms ?? null,
    cpuUsPerFrame: level?.serverCpuUsPerFrame ?? null,
    cpuOverFloor: level?.serverCpuOverFloor ?? null,
    cpuUsPerFramePerReplica: level?.replicas.map((r) => r.cpuUsPerFrame) ?? [],
    receiptsPerS: level?.receipts.perS ?? 0,
    receiptsPerSPerReplica: level?.replicas.map((r) => r.receiptsPerS) ?? [],
  };
}

type Scrape = Awaited<ReturnType<typeof scrape>>;

/** One level's figures from what the clients reported and the servers' metrics and CPU before and after the hold. */
export function levelFigures(m: {
  level: number;
  rampS: number;
  previousConnected: number;
  reports: ClientReport[];
  befores: Scrape[];
  afters: Scrape[];
  cpus: number[];
  clientCpu: number;
  holdMs: number;
  memory: { rss: number; heapUsed: number; each: NodeJS.MemoryUsage[] };
  baseline: { rss: number; heapUsed: number };
  raw: RawBaseline | null;
  meterBefore: MeterCounts;
  meterAfter: MeterCounts;
  metered: number;
}): AgentsLevelFigures {
  const { reports, befores, afters, holdMs } = m;
  const sum = (f: (r: ClientReport) => number) => reports.reduce((total, r) => total + f(r), 0);
  const perS = (n: number) => Math.round((n * 10_000) / holdMs) / 10;
  const perReplica = afters.map((a, r) => {
    const b = befores[r] as Scrape;
    const frames = a.handling.count - b.handling.count;
    const cpu = m.cpus[r] as number;
    const { p99Ms, within50Pct } = histogramDelta(b.handling, a.handling);
    return {
      agents: sum((rep) => rep.connectedByReplica[r] ?? 0),
      frames,
      cpuPctOfCore: Math.round((1000 * cpu) / holdMs) / 10,
      cpuUsPerFrame: frames > 0 ? Math.round((1000 * cpu) / frames) : null,
      p99Ms,
      within50Pct,
      rssMb: Math.round((m.memory.each[r]?.rss ?? 0) / 1_048_576),
      receiptsPerS: perS(sum((rep) => rep.receiptsAcked[r] ?? 0)),
    };
  });
  const connected = sum((r) => r.connectedByReplica.reduce((a, b) => a + b, 0));
  const framesHandled = perReplica.reduce((total, r) => total + r.frames, 0);
  const serverCpu = m.cpus.reduce((total, c) => total + c, 0);
  const serverCpuUsPerFrame = framesHandled > 0 ? Math.round((1000 * serverCpu) / framesHandled) : null;
  const floor = m.raw?.floorCpuUsPerFrame ?? null;
  // Several replicas: the worst replica's p99 and share within 50 ms.
  const p99s = perReplica.map((r) => r.p99Ms);
  const p99Ms = p99s.includes(null) ? null : Math.max(...(p99s as number[]));
  const shares = perReplica.map((r) => r.within50Pct);
  const within50Pct = shares.includes(null) ? null : Math.min(...(shares as number[]));
  const rtts = reports.flatMap((r) => r.rtts).sort((a, b) => a - b);
  const rssPerAgent = (m.memory.rss - m.baseline.rss) / Math.max(1, connected);
  const heapPerAgent = (m.memory.heapUsed - m.baseline.heapUsed) / Math.max(1, connected);
  const closes = sum((r) => r.closesAfterWelcome) + afters.reduce((total, a, r) => total + a.closes - (befores[r]?.closes ?? 0), 0);
  const badFrames = sum((r) => r.badFrames);
  const first = { before: befores[0] as Scrape, after: afters[0] as Scrape };
  const acked = sum((r) => r.receiptsAcked.reduce((a, b) => a + b, 0));
  const f: AgentsLevelFigures = {
    agents: m.level,
    connected,
    rampS: Math.round(m.rampS * 10) / 10,
    handshakesPerS: Math.round((connected - m.previousConnected) / m.rampS),
    heartbeats: sum((r) => r.heartbeats),
    telemetryBatches: sum((r) => r.telemetryBatches),
    serverHandlingP99Ms: p99Ms,
    serverWithin50MsPct: within50Pct === null ? null : Math.round(within50Pct * 100) / 100,
    serverHandlingP99MsByType: Object.fromEntries(
      [...first.after.handling.byType].map(([type, entry]) => [
        type,
        histogramDelta(first.before.handling.byType.get(type) ?? { buckets: new Map(), count: 0 }, entry).p99Ms,
      ]),
    ),
    eventLoopDelayP99Ms: first.after.loopDelayP99Ms === null ? null : Math.round(first.after.loopDelayP99Ms * 10) / 10,
    rttP50Ms: round1(percentile(rtts, 50)),
    rttP99Ms: round1(percentile(rtts, 99)),
    rttMaxMs: round1(rtts.at(-1) ?? null),
    closes,
    serverCpuPctOfCore: Math.round((1000 * serverCpu) / holdMs) / 10,
    serverCpuUsPerFrame,
    floorCpuUsPerFrame: floor,
    serverCpuOverFloor: serverCpuUsPerFrame !== null && floor ? Math.round((100 * serverCpuUsPerFrame) / floor) / 100 : null,
    agentsCpuPctOfCore: Math.round((1000 * m.clientCpu) / holdMs) / 10,
    receipts: {
      metered: m.metered,
      sent: sum((r) => r.receiptsSent.reduce((a, b) => a + b, 0)),
      acked,
      perS: perS(acked),
      appliedInStore: m.meterAfter.applied - m.meterBefore.applied,
      refusals: m.meterAfter.refusals,
      jobsNotRunning: m.meterAfter.notRunning,
    },
    serverRssMb: Math.round(m.memory.rss / 1_048_576),
    rssPerAgentBytes: Math.round(rssPerAgent),
    heapPerAgentBytes: Math.round(heapPerAgent),
    rawSocketRssBytes: m.raw === null ? null : Math.round(m.raw.rss),
    beyondRawSocketBytes: m.raw === null ? null : Math.round(rssPerAgent - m.raw.rss),
    rawSocketHeapBytes: m.raw === null ? null : Math.round(m.raw.heap),
    beyondRawSocketHeapBytes: m.raw === null ? null : Math.round(heapPerAgent - m.raw.heap),
    replicas: perReplica.map(({ within50Pct: _, ...r }) => r),
    held: connected === m.level && closes === 0 && badFrames === 0 && within50Pct !== null && within50Pct >= 99,
    heldEndToEnd: false,
  };
  f.heldEndToEnd = f.held && f.rttP99Ms !== null && f.rttP99Ms < 100;
  return f;
}

export function describeLevel(f: AgentsLevelFigures, holdS: number, replicaCount: number): string {
  const kb = (bytes: number) => (bytes / 1024).toFixed(1);
  return (
    `${f.agents} agents: ${f.heartbeats} heartbeats, ${f.telemetryBatches} telemetry batches, ${f.receipts.acked} receipts ` +
    `(${f.receipts.perS}/s from ${f.receipts.metered} metered; ${f.receipts.appliedInStore} applied in the store, ${f.receipts.refusals} refused) in ${holdS} s; ` +
    `server p99 <= ${f.serverHandlingP99Ms} ms (${f.serverWithin50MsPct}% within 50 ms; ${Object.entries(f.serverHandlingP99MsByType)
      .filter(([, v]) => v !== null)
      .map(([t, v]) => `${t} ${v}`)
      .join(', ')}), event-loop p99 ${f.eventLoopDelayP99Ms} ms; ` +
    `agent round trip p50/p99/max ${f.rttP50Ms}/${f.rttP99Ms}/${f.rttMaxMs} ms; ` +
    `server CPU ${f.serverCpuPctOfCore}% of a core (${f.serverCpuUsPerFrame} us/frame` +
    (f.floorCpuUsPerFrame === null ? '' : `, ${f.serverCpuOverFloor}x a bare socket's ${f.floorCpuUsPerFrame}`) +
    `), agents CPU ${f.agentsCpuPctOfCore}%; ` +
    `RSS ${f.serverRssMb} MB, ${kb(f.rssPerAgentBytes)} KB/agent` +
    (f.beyondRawSocketBytes === null ? '' : ` (${kb(f.beyondRawSocketBytes)} KB beyond a bare socket)`) +
    `, heap ${kb(f.heapPerAgentBytes)} KB/agent` +
    (f.beyondRawSocketHeapBytes === null ? '' : ` (${kb(f.beyondRawSocketHeapBytes)} KB beyond a bare socket)`) +
    (replicaCount > 1
      ? `; per replica: ${f.replicas.map((r) => `${r.agents} agents, ${r.cpuUsPerFrame} us/frame, p99 <= ${r.p99Ms} ms, ${r.receiptsPerS} receipts/s, RSS ${r.rssMb} MB`).join(' | ')}`
      : '') +
    `; closes ${f.closes}; ${f.held ? 'HELD' : 'NOT HELD'}${f.heldEndToEnd ? ' (end to end too)' : ''}`
  );
}

function round1(value: number | null): number | null {
  return value === null ? null : Math.round(value * 10) / 10;
}
