// What verified readiness (issue 24 item 1) adds to reservation -> RUNNING: two real `ark-cp serve` (SQLite by
// default), one verifying readiness (the default) and one with ARK_READINESS_VERIFY=off (the bench's baseline: the
// meter starts at the agent's word), each with a paired `ark-agent run` on one private dockerd that already holds the
// job image. Rounds alternate between the two sites, so passing load falls on both. Each round reserves over HTTP and
// waits for RUNNING, then stops the job and waits for CLOSED. Figures, over the rounds:
// - reservationToRunningMedianMs (and its spread): from the reservation (the job's created_at) to the RUNNING
//   transition's event, both stamped by the control plane's clock (polling adds nothing), with verification and without;
// - addedMedianMs: the difference of the two medians (budget: at most 200 ms at p50); addedPairedMedianMs: the median
//   of each round's own difference;
// - phasesMedianMs (verified rounds): reservation -> STARTING (the launch reaching the agent), STARTING -> the agent's
//   ready report (Docker creates and starts the container: most of the time, and most of its variance, on both sides),
//   and the verification: the agent's ready report to the verified host key (meter_started_at), the wake-up on the
//   report's commit, the claim, the SSH handshake with the access endpoint, the job's move.
// Run: pnpm bench readiness --rounds 20, or pnpm exec tsx test/bench/readiness.bench.ts [--rounds 7] [--dialects sqlite,postgres]
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { type Dialect, type DockerWorld, RentalSite, startDockerWorld } from '../e2e/rental-helpers.js';
import { isDockerAvailable } from '../harness/dockerd.js';

export interface ReadinessBenchOptions {
  /** Reservations per site (default 7, at most 20). */
  rounds?: number;
  dialects?: readonly Dialect[];
  log?: (line: string) => void;
}

type Spread = { min: number; p25: number; p75: number; max: number };

export interface ReadinessStoreFigures {
  rounds: number;
  reservationToRunningMedianMs: { verified: number; unverified: number };
  reservationToRunningSpreadMs: { verified: Spread; unverified: Spread };
  /** The budget's figure: the difference of the two medians. */
  addedMedianMs: number;
  /** The median of each round's own difference (the two sides of a round run back to back). */
  addedPairedMedianMs: number;
  verificationMedianMs: number;
  verificationSpreadMs: Spread;
  /** Where a verified round's time goes: reservation -> STARTING (launch delivered), STARTING -> the agent's ready report, the check. */
  phasesMedianMs: { launch: number; agent: number; verification: number };
}

export interface ReadinessBenchFigures {
  stores: Partial<Record<Dialect, ReadinessStoreFigures>>;
  budgets: { addedMedianMsMax: number };
  withinBudget: Partial<Record<Dialect, boolean>>;
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[middle] as number)
    : Math.round(((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2);
};
const ms = (iso: string) => new Date(iso).getTime();

interface Round {
  toRunningMs: number;
  /** The phases of a verified round (null without verification): launch delivered, the agent's start, the check. */
  phases: { launchMs: number; agentMs: number; verificationMs: number } | null;
}

/** One reservation to RUNNING, then stopped and closed: the server-side time to RUNNING and where it went. */
async function oneRound(site: RentalSite): Promise<Round> {
  const sent = performance.now();
  const { jobId } = await site.reserve({ budgetMicro: 1_000_000n });
  let job = await site.job(jobId);
  while (job.state !== 'RUNNING') {
    if (performance.now() - sent > 60_000 || job.state === 'FAILED')
      throw new Error(`job ${jobId} not RUNNING: ${JSON.stringify(job)}\n${site.logs()}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
    job = await site.job(jobId);
  }
  const events = await site.events(jobId);
  const moved = (to: string) => events.find((event) => event.kind === 'state_changed' && event.data.to === to) as unknown as { at: string };
  const reported = events.find((event) => event.kind === 'readiness_reported');
  await site.stopAndClose(jobId);
  const created = ms(job.created_at);
  return {
    toRunningMs: ms(moved('RUNNING').at) - created,
    phases:
      reported === undefined
        ? null
        : {
            launchMs: ms(moved('STARTING').at) - created,
            agentMs: ms(reported.data.reported_at) - ms(moved('STARTING').at),
            verificationMs: ms(job.meter_started_at) - ms(reported.data.reported_at),
          },
  };
}

/** The least, the quartiles and the most of a side's rounds. */
const spreadOf = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
  return { min: sorted[0] as number, p25: at(0.25), p75: at(0.75), max: sorted[sorted.length - 1] as number };
};

async function measureStore(
  world: DockerWorld,
  dialect: Dialect,
  rounds: number,
  log: (line: string) => void,
): Promise<ReadinessStoreFigures> {
  // No retrieval window: a stopped job is cleaned at once and the next round can reserve the machine.
  const verified = await RentalSite.start(dialect, world, { cpEnv: { ARK_RETRIEVAL_WINDOW_S: '0' } });
  try {
    const unverified = await RentalSite.start(dialect, world, { cpEnv: { ARK_RETRIEVAL_WINDOW_S: '0', ARK_READINESS_VERIFY: 'off' } });
    try {
      const on: number[] = [];
      const off: number[] = [];
      const phases: Array<NonNullable<Round['phases']>> = [];
      // A first round each, not counted: the first reservation of a process warms its code paths.
      await oneRound(verified);
      await oneRound(unverified);
      for (let round = 1; round <= rounds; round += 1) {
        const a = await oneRound(verified);
        const b = await oneRound(unverified);
        on.push(a.toRunningMs);
        off.push(b.toRunningMs);
        if (a.phases !== null) phases.push(a.phases);
        log(
          `readiness: ${dialect} round ${round}: to RUNNING ${a.toRunningMs} ms verified, ${b.toRunningMs} ms not` +
            (a.phases === null
              ? ''
              : ` (verified: launch ${a.phases.launchMs} ms, agent ${a.phases.agentMs} ms, check ${a.phases.verificationMs} ms)`),
        );
      }
      const medians = { verified: median(on), unverified: median(off) };
      return {
        rounds,
        reservationToRunningMedianMs: medians,
        reservationToRunningSpreadMs: { verified: spreadOf(on), unverified: spreadOf(off) },
        addedMedianMs: medians.verified - medians.unverified,
        addedPairedMedianMs: median(on.map((value, i) => value - (off[i] as number))),
        verificationMedianMs: median(phases.map((p) => p.verificationMs)),
        verificationSpreadMs: spreadOf(phases.map((p) => p.verificationMs)),
        phasesMedianMs: {
          launch: median(phases.map((p) => p.launchMs)),
          agent: median(phases.map((p) => p.agentMs)),
          verification: median(phases.map((p) => p.verificationMs)),
        },
      };
    } finally {
      await unverified.stop();
    }
  } finally {
    await verified.stop();
  }
}

export async function run(options: ReadinessBenchOptions = {}): Promise<ReadinessBenchFigures> {
  const rounds = Math.max(1, Math.min(options.rounds ?? 7, 20));
  const dialects = options.dialects ?? ['sqlite'];
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  if (!isDockerAvailable())
    throw new Error('the readiness bench needs the Docker harness (dockerd, docker-registry, busybox-static, root)');
  const budgets = { addedMedianMsMax: 200 };
  const world = await startDockerWorld();
  try {
    const stores: ReadinessBenchFigures['stores'] = {};
    const withinBudget: ReadinessBenchFigures['withinBudget'] = {};
    for (const dialect of dialects) {
      const figures = await measureStore(world, dialect, rounds, log);
      stores[dialect] = figures;
      withinBudget[dialect] = figures.addedMedianMs <= budgets.addedMedianMsMax;
    }
    return { stores, budgets, withinBudget };
  } finally {
    await world.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { values } = parseArgs({ options: { rounds: { type: 'string' }, dialects: { type: 'string' } } });
  const figures = await run({
    rounds: values.rounds === undefined ? undefined : Number(values.rounds),
    dialects: values.dialects === undefined ? undefined : (values.dialects.split(',') as Dialect[]),
  });
  process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
  process.exit(0);
}
