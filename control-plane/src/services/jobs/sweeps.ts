import { iso } from '../../clock.js';
import { fundingStopOf, lostMachineOutcome } from '../../domain/jobs/ending.js';
import type { Executor } from '../../store/db.js';
import { jobIdsCreatedBefore, jobIdsInStates, jobIdsOnSilentMachines } from '../../store/jobs.js';
import { storedHeartbeatAtOf } from '../../store/machines.js';
import { purgeExpiredQuotes } from '../../store/quotes.js';
import type { JobDeps } from './deps.js';
import { type HeldJob, withJob } from './held-job.js';
import { failUnverified, lastReadinessError } from './readiness.js';

// The control plane's own moves on jobs: what the clock and silence decide. Each sweep reads a bounded batch of
// candidate ids, then re-checks every job with its row held (another replica's sweep, or an agent message, may have
// moved it since) before changing it. Steps take `now` from the worker runner (a ManualClock in tests).

/** Most jobs one sweep step moves; the next step takes the rest. */
export const SWEEP_BATCH = 100;

export interface JobSweeps {
  /** RUNNING past funded_through (budget time, duration limit, host ceiling) -> STOPPING. */
  funding(now: Date): Promise<number>;
  /** Silent machines: RUNNING -> RECONCILING -> FAILED; waiting jobs fail and stopping/cleaning ones close. */
  liveness(now: Date): Promise<number>;
  /** RESERVED/STARTING past the start timeout -> STOPPING (a cancellation). */
  startTimeout(now: Date): Promise<number>;
  /** STOPPED past the retrieval window -> CLEANING, clean_job queued. */
  retrieval(now: Date): Promise<number>;
  /** Unused quotes an hour past expiry are deleted. */
  quotes(now: Date): Promise<number>;
  /** Every step once, in the order above (tests, and `ark-cp jobs sweep`). Returns how many jobs or quotes moved. */
  runOnce(now: Date): Promise<number>;
}

export function jobSweeps(deps: JobDeps): JobSweeps {
  const sweeps: JobSweeps = {
    funding: (now) => sweepFunding(deps, now),
    liveness: (now) => sweepLiveness(deps, now),
    startTimeout: (now) => sweepStartTimeout(deps, now),
    retrieval: (now) => sweepRetrieval(deps, now),
    quotes: (now) => purgeExpiredQuotes(deps.store.db, now),
    async runOnce(now) {
      let moved = 0;
      for (const step of [sweeps.funding, sweeps.liveness, sweeps.startTimeout, sweeps.retrieval, sweeps.quotes]) moved += await step(now);
      return moved;
    },
  };
  return sweeps;
}

/** Applies `move` to each job (its row held); counts the jobs it moved. */
async function moveEach(deps: JobDeps, ids: readonly string[], move: (held: HeldJob) => Promise<boolean>): Promise<number> {
  let moved = 0;
  for (const id of ids) if (await withJob(deps, id, move)) moved += 1;
  return moved;
}

async function sweepFunding(deps: JobDeps, now: Date): Promise<number> {
  const ids = await jobIdsInStates(deps.store.db, ['RUNNING'], { fundedThroughAtOrBefore: now, limit: SWEEP_BATCH });
  return moveEach(deps, ids, async (held) => {
    const reason = fundingStopOf(held.job, now);
    if (reason === null) return false;
    await held.beginStop(reason, now);
    return true;
  });
}

/**
 * Silent machines: RUNNING jobs move to RECONCILING past the grace; RECONCILING jobs fail past the reconcile timeout
 * (hold released); jobs waiting to start fail, and stopping or cleaning jobs close, once the machine has been silent
 * for grace + timeout.
 */
async function sweepLiveness(deps: JobDeps, now: Date): Promise<number> {
  const { agentGraceMs, reconcileTimeoutMs } = deps.settings;
  const db = deps.store.db;
  const graceAgo = new Date(now.getTime() - agentGraceMs);
  const lostAgo = new Date(now.getTime() - agentGraceMs - reconcileTimeoutMs);
  let moved = 0;
  const silentRunning = await jobIdsOnSilentMachines(db, ['RUNNING'], graceAgo, graceAgo, SWEEP_BATCH);
  moved += await moveEach(deps, silentRunning, async (held) => {
    if (held.job.state !== 'RUNNING' || !(await machineSilentSince(deps, held.trx, held.job.machineId, graceAgo))) return false;
    await held.transition(
      'RECONCILING',
      now,
      {},
      { message: 'The machine went silent; no receipts are accepted until it is back.', data: { reason: 'agent_silent' } },
    );
    return true;
  });
  const timedOut = await jobIdsInStates(db, ['RECONCILING'], {
    stateChangedBefore: new Date(now.getTime() - reconcileTimeoutMs),
    limit: SWEEP_BATCH,
  });
  moved += await moveEach(deps, timedOut, async (held) => {
    if (held.job.state !== 'RECONCILING' || held.job.stateChangedAt.getTime() >= now.getTime() - reconcileTimeoutMs) return false;
    await held.fail('agent_lost', now);
    return true;
  });
  const lost = await jobIdsOnSilentMachines(db, ['RESERVED', 'STARTING', 'STOPPING', 'CLEANING'], lostAgo, lostAgo, SWEEP_BATCH);
  moved += await moveEach(deps, lost, async (held) => {
    if (!(await machineSilentSince(deps, held.trx, held.job.machineId, lostAgo))) return false;
    if (held.job.stateChangedAt.getTime() >= lostAgo.getTime()) return false;
    const outcome = lostMachineOutcome(held.job.state);
    if (outcome === null) return false;
    if (outcome.outcome === 'fail') await held.fail(outcome.reason, now);
    else await held.close(now, outcome.reason);
    return true;
  });
  return moved;
}

async function machineSilentSince(deps: JobDeps, db: Executor, machineId: string, since: Date): Promise<boolean> {
  const stored = await storedHeartbeatAtOf(db, machineId);
  // A heartbeat buffered in this process (store/heartbeats.ts) counts; other replicas' lag by at most 1 s.
  const last = stored === undefined ? null : deps.heartbeats.lastHeartbeatAt(machineId, stored);
  return !last || last < iso(since);
}

/**
 * Jobs that did not become ready within the start timeout of their reservation are cancelled; a job whose readiness
 * was reported but never verified fails (readiness_unverified), the verifier's own deadline, kept here too.
 */
async function sweepStartTimeout(deps: JobDeps, now: Date): Promise<number> {
  const before = new Date(now.getTime() - deps.settings.startTimeoutMs);
  const ids = await jobIdsCreatedBefore(deps.store.db, ['RESERVED', 'STARTING'], before, SWEEP_BATCH);
  return moveEach(deps, ids, async (held) => {
    if ((held.job.state !== 'RESERVED' && held.job.state !== 'STARTING') || held.job.createdAt.getTime() >= before.getTime()) return false;
    // Reported ready but never verified: the endpoint is what failed, and the host is told (services/jobs/readiness.ts).
    const unverified = held.job.state === 'STARTING' ? await lastReadinessError(held) : null;
    if (unverified !== null) await failUnverified(held, unverified, now);
    else await held.beginStop('start_timeout', now);
    return true;
  });
}

/** STOPPED jobs whose retrieval window ended move to CLEANING; the agent removes container and volume. */
async function sweepRetrieval(deps: JobDeps, now: Date): Promise<number> {
  const ids = await jobIdsInStates(deps.store.db, ['STOPPED'], { retrievalEndedAt: now, limit: SWEEP_BATCH });
  return moveEach(deps, ids, async (held) => {
    if (held.job.state !== 'STOPPED' || (held.job.retrievalUntil !== null && held.job.retrievalUntil.getTime() > now.getTime()))
      return false;
    await held.transition(
      'CLEANING',
      now,
      {},
      { message: 'The retrieval window ended; the machine removes the container and its volume.' },
    );
    await held.enqueueClean(now);
    return true;
  });
}
