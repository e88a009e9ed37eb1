import type { Selectable } from 'kysely';
import { iso } from '../clock.js';
import { type Executor, toJson } from './db.js';
import type { JobReadinessTable } from './tables/jobs.js';

// Jobs the agent reported ready, waiting in STARTING for the control plane's verification (issue 24 item 1). A row
// is the work item of the readiness verifier: claimed for a while by one replica (compare-and-set on the claim), so
// one verification runs at a time across replicas; a claim that runs out (its replica died) is taken again.

export type JobReadinessRow = Selectable<JobReadinessTable>;

/**
 * Records (or renews) a readiness report: a new row is due now; a repeated report (the agent re-announced after a
 * reconnect) takes the new fence and is due now, and keeps the first reported instant and the attempts so far.
 */
export async function recordReadinessReport(
  db: Executor,
  report: { jobId: string; machineId: string; fence: bigint; reportedAt: Date; evidence: Record<string, unknown>; now: Date },
): Promise<void> {
  await db
    .insertInto('job_readiness')
    .values({
      job_id: report.jobId,
      machine_id: report.machineId,
      fence: report.fence,
      reported_at: iso(report.reportedAt),
      evidence: toJson(report.evidence),
      attempts: 0n,
      next_attempt_at: iso(report.now),
      created_at: iso(report.now),
    })
    .onConflict((oc) =>
      oc.column('job_id').doUpdateSet({
        fence: report.fence,
        machine_id: report.machineId,
        evidence: toJson(report.evidence),
        next_attempt_at: iso(report.now),
      }),
    )
    .execute();
}

export async function readinessOf(db: Executor, jobId: string): Promise<JobReadinessRow | undefined> {
  return db.selectFrom('job_readiness').selectAll().where('job_id', '=', jobId).executeTakeFirst();
}

/** Rows due at `now` whose job still waits in STARTING and which nobody holds, oldest due first. */
export async function dueReadiness(db: Executor, now: Date, limit: number): Promise<JobReadinessRow[]> {
  const at = iso(now);
  return db
    .selectFrom('job_readiness')
    .innerJoin('jobs', 'jobs.id', 'job_readiness.job_id')
    .selectAll('job_readiness')
    .where('jobs.state', '=', 'STARTING')
    .where('job_readiness.next_attempt_at', '<=', at)
    .where((eb) => eb.or([eb('job_readiness.claimed_until', 'is', null), eb('job_readiness.claimed_until', '<=', at)]))
    .orderBy('job_readiness.next_attempt_at')
    .limit(limit)
    .execute();
}

/** Takes the row for `claimant` until `until` when nobody holds it now; true when this call took it. */
export async function claimReadiness(db: Executor, jobId: string, claimant: string, now: Date, until: Date): Promise<boolean> {
  const at = iso(now);
  const result = await db
    .updateTable('job_readiness')
    .set({ claimed_by: claimant, claimed_until: iso(until) })
    .where('job_id', '=', jobId)
    .where((eb) => eb.or([eb('claimed_until', 'is', null), eb('claimed_until', '<=', at)]))
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

/** A failed attempt: the claim is let go and the row is due again at `nextAttemptAt`. */
export async function deferReadiness(
  db: Executor,
  jobId: string,
  attempt: { attempts: bigint; nextAttemptAt: Date; lastError: string },
): Promise<void> {
  await db
    .updateTable('job_readiness')
    .set({
      attempts: attempt.attempts,
      next_attempt_at: iso(attempt.nextAttemptAt),
      last_error: attempt.lastError.slice(0, 500),
      claimed_by: null,
      claimed_until: null,
    })
    .where('job_id', '=', jobId)
    .execute();
}

/** The job left STARTING (verified, failed, stopped): its work item goes. */
export async function deleteReadiness(db: Executor, jobId: string): Promise<void> {
  await db.deleteFrom('job_readiness').where('job_id', '=', jobId).execute();
}

/** The reason the last verification on the machine failed (shown to its host as a problem), or null once one passed. */
export async function setMachineReadinessProblem(db: Executor, machineId: string, problem: string | null): Promise<void> {
  await db.updateTable('machines').set({ readiness_problem: problem }).where('id', '=', machineId).execute();
}
