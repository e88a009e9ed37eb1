import type { JobState } from '@ark/shared';
import { DomainError } from '../../errors.js';
import { type FundingBound, fundedThrough } from '../metering/charges.js';
import { fundingOf, type JobRecord } from './job.js';
import { type CloseReason, type StopAnswerState, STOPPABLE_STATES, stopAnswerOf, stopReasonOf } from './states.js';

// How jobs end: who may stop them and what the answer is, why the control plane stops them itself, and what the
// sweeps do with jobs whose machine went silent. Pure; services/jobs/ applies it.

/** The state_changed message each close reason gets. */
export const STOP_MESSAGES: Readonly<Record<CloseReason, string>> = {
  stopped_by_renter: 'Stop requested by the renter.',
  stopped_by_admin: 'Stop requested by an administrator.',
  budget_exhausted: 'Stopping: the funded budget is spent.',
  duration_limit: 'Stopping: the duration limit has passed.',
  host_ceiling: "Stopping: the host's availability ends.",
  container_exited: 'The container exited on its own; stopping the job.',
  start_timeout: 'Cancelled: the job did not become ready in time.',
  launch_failed: 'The launch failed.',
  job_failed: 'The job failed on the machine.',
  agent_lost: 'The machine stayed silent past the reconcile timeout; the job failed.',
  machine_lost: 'The machine stayed silent; the job was closed without its confirmation.',
  readiness_unverified: "Failed: the job's endpoint could not be verified before the start timeout; nothing was charged.",
  gpu_lost: "Failed: a GPU assigned to the job is gone from the machine's telemetry; the container is being removed.",
};

/** The close reason of the funding bound that ran out. */
export const BOUND_REASON: Readonly<Record<FundingBound, CloseReason>> = {
  budget: 'budget_exhausted',
  duration_limit: 'duration_limit',
  host_ceiling: 'host_ceiling',
};

/** Who asks for a stop: the renter who owns the job, or an administrator. */
export interface StopCaller {
  accountId: string;
  admin: boolean;
}

export type StopDecision = { outcome: 'begin'; reason: CloseReason } | { outcome: 'answer'; state: StopAnswerState };

/**
 * A stop request: before readiness it cancels the launch, while running it stops the container; a job already
 * stopping or ended answers its state (a repeat). Anyone but the owner or an admin gets 404; a failed job 409.
 */
export function stopDecision(job: Pick<JobRecord, 'accountId' | 'state'>, caller: StopCaller): StopDecision {
  if (job.accountId !== caller.accountId && !caller.admin) throw new DomainError('NOT_FOUND');
  if (STOPPABLE_STATES.includes(job.state))
    return { outcome: 'begin', reason: stopReasonOf(caller.admin && job.accountId !== caller.accountId) };
  const state = stopAnswerOf(job.state);
  if (state === null) throw new DomainError('JOB_NOT_STOPPABLE');
  return { outcome: 'answer', state };
}

/** Seconds of SFTP retrieval a stopped job gets: none for a job that never ran (nothing to fetch). */
export function retrievalWindowSOf(job: Pick<JobRecord, 'meterStartedAt'>, retrievalWindowS: number): number {
  return job.meterStartedAt !== null ? retrievalWindowS : 0;
}

/** A RUNNING job whose funded_through has passed (budget time, duration limit or host ceiling) stops, and why. */
export function fundingStopOf(job: JobRecord, now: Date): CloseReason | null {
  if (job.state !== 'RUNNING' || job.meterStartedAt === null) return null;
  const funded = fundedThrough(fundingOf(job), job.meterStartedAt);
  return funded.at.getTime() <= now.getTime() ? BOUND_REASON[funded.bound] : null;
}

/** After a charge: a RUNNING job whose charge reached its budget, or whose funding ran out, stops. */
export function stopAfterCharge(job: JobRecord, now: Date): CloseReason | null {
  if (job.state !== 'RUNNING') return null;
  if (job.cumulativeChargeMicro >= job.fundedBudgetMicro) return 'budget_exhausted';
  return fundingStopOf(job, now);
}

/**
 * A job whose machine stayed silent for the grace plus the reconcile timeout: jobs still waiting to start fail
 * (nothing ran), stopping and cleaning jobs close without the machine's confirmation. Others are not the sweep's.
 */
export function lostMachineOutcome(state: JobState): { outcome: 'fail' | 'close'; reason: CloseReason } | null {
  if (state === 'RESERVED' || state === 'STARTING') return { outcome: 'fail', reason: 'agent_lost' };
  if (state === 'STOPPING' || state === 'CLEANING') return { outcome: 'close', reason: 'machine_lost' };
  return null;
}
