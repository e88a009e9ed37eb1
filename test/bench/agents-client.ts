// One client process of agents.bench.ts: holds its share of the simulated agents (sim-agent.ts), agent i of the run
// when i % clients is its number, so no one process runs out of descriptors or CPU before the servers do. Driven by
// the bench over IPC:
//   {type:'init', ...}                      -> {type:'ready'}          derive its machines' keys, build its agents
//   {type:'warm', index}                    -> {type:'warmed', ok}     one agent on every replica, then closed
//   {type:'connect', upto, concurrency, deadline} -> {type:'connected', connected, fdExhausted}
//                                                               connect its agents below `upto` (by the deadline)
//   {type:'hold', on: true}                 -> {type:'holding'}        start the hold's counters
//   {type:'hold', on: false}                -> {type:'report', ...}    stop them and report (ClientReport)
// It answers {type:'started'} first. SIGTERM closes every socket and exits.
import { pathToFileURL } from 'node:url';
import { benchMachine } from './agents-server.js';
import { Fleet, type FleetSettings, type MeteredJob, SimAgent } from './sim-agent.js';

export interface ClientInit {
  type: 'init';
  settings: FleetSettings;
  seedHex: string;
  client: number;
  clients: number;
  /** Agents of the largest level (indices 0 .. agents - 1). */
  agents: number;
  /** This client's metered agents' jobs, by agent index. */
  jobs: Record<number, MeteredJob>;
}

export interface ClientReport {
  type: 'report';
  /** Agents connected (welcomed and not closed) to each replica. */
  connectedByReplica: number[];
  closesAfterWelcome: number;
  badFrames: number;
  fdExhausted: boolean;
  /** Round trips of the hold (frame sent -> its ack), ms. */
  rtts: number[];
  heartbeats: number;
  telemetryBatches: number;
  receiptsSent: number[];
  receiptsAcked: number[];
}

function main(): void {
  let fleet: Fleet | null = null;
  let agents: SimAgent[] = [];
  let init: ClientInit | null = null;
  let cursor = 0;
  const seed = () => Buffer.from(init?.seedHex ?? '', 'hex');
  const send = (message: Record<string, unknown>) => process.send?.(message);

  process.on('message', async (message: { type?: string } & Record<string, unknown>) => {
    if (message.type === 'init') {
      init = message as unknown as ClientInit;
      fleet = new Fleet(init.settings);
      const replicas = init.settings.urls.length;
      agents = [];
      for (let i = init.client; i < init.agents; i += init.clients) {
        agents.push(new SimAgent(fleet, benchMachine(seed(), i), i % replicas, init.jobs[i] ?? null));
      }
      send({ type: 'ready' });
    } else if (message.type === 'warm' && fleet && init) {
      // One agent per replica first, so each gateway has started (identity, timers) before the memory baseline.
      let ok = true;
      for (let r = 0; r < init.settings.urls.length; r++) {
        const warm = new SimAgent(fleet, benchMachine(seed(), message.index as number), r, null);
        ok = (await warm.connect()) && ok;
        warm.close();
      }
      send({ type: 'warmed', ok });
    } else if (message.type === 'connect' && fleet && init) {
      const f = fleet;
      const upto = message.upto as number;
      const deadline = message.deadline as number;
      // Agent i of the run is agents[(i - client) / clients] here: connect those below `upto`.
      const mine = Math.max(0, Math.ceil((upto - init.client) / init.clients));
      const workers = Array.from({ length: message.concurrency as number }, async () => {
        while (cursor < mine && !f.fdExhausted && Date.now() < deadline) await (agents[cursor++] as SimAgent).connect();
      });
      await Promise.all(workers);
      send({ type: 'connected', connected: agents.filter((a) => a.ready).length, fdExhausted: f.fdExhausted });
    } else if (message.type === 'hold' && fleet && init) {
      if (message.on) {
        fleet.resetHold();
        fleet.measuring = true;
        send({ type: 'holding' });
        return;
      }
      fleet.measuring = false;
      const connectedByReplica = init.settings.urls.map(() => 0);
      for (const agent of agents) if (agent.ready) connectedByReplica[agent.replica] = (connectedByReplica[agent.replica] ?? 0) + 1;
      const report: ClientReport = {
        type: 'report',
        connectedByReplica,
        closesAfterWelcome: fleet.closesAfterWelcome,
        badFrames: fleet.badFrames,
        fdExhausted: fleet.fdExhausted,
        rtts: fleet.rtts.map((ms) => Math.round(ms * 100) / 100),
        heartbeats: fleet.heartbeats,
        telemetryBatches: fleet.telemetryBatches,
        receiptsSent: fleet.receiptsSent,
        receiptsAcked: fleet.receiptsAcked,
      };
      send(report as unknown as Record<string, unknown>);
    }
  });
  send({ type: 'started' });
  process.once('SIGTERM', () => {
    for (const agent of agents) agent.close();
    process.exit(0);
  });
  process.once('disconnect', () => process.exit(0));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) main();
