import type { JobState } from '@ark/shared';

// The job state machine (contract part 3, DESIGN.md "Job runtime on the host"). The contract fixes the normal
// order RESERVED -> STARTING -> RUNNING -> STOPPING -> STOPPED -> CLEANING -> CLOSED and leaves the rest to us:
//
//   RESERVED    -> STARTING     the agent accepted the launch
//   RESERVED    -> RUNNING      readiness reported before the acceptance was seen (never skipped in practice)
//   STARTING    -> RUNNING      verified readiness: the agent reported the job ready, and the control plane itself
//                                completed an SSH handshake with the access endpoint, found the host key the agent
//                                reported (and, for model jobs, the engine's model list through the relay): the meter
//                                starts at that verification (domain/jobs/readiness.ts)
//   RESERVED, STARTING -> STOPPING   stop before readiness (renter, admin, start timeout): a cancellation
//   RESERVED, STARTING -> FAILED     the launch failed, the machine vanished past grace + reconcile timeout, or the
//                                endpoint could not be verified before the start timeout (readiness_unverified)
//   RUNNING     -> STOPPING     stop request, budget spent, duration limit or host ceiling reached, container exited
//   RUNNING     -> RECONCILING  the machine went silent past its grace: no receipts are accepted for the gap
//   RECONCILING -> RUNNING      the agent came back and its heartbeat lists the container running
//   RECONCILING -> STOPPING     stop requested while reconciling
//   RECONCILING -> FAILED       the reconcile timeout passed: the unspent hold is released
//   RUNNING, RECONCILING, RESERVED, STARTING -> STOPPED   the agent reports the container stopped on its own: the
//                                unspent hold is released (as at any STOPPED)
//   RUNNING     -> FAILED       the agent reports the job failed (its container vanished)
//   STOPPING    -> STOPPED      the machine confirmed the stop (stopped_at), its final receipt settled before: the
//                                unspent hold is released at once (the retrieval window holds storage, not money)
//   STOPPED     -> CLEANING     the retrieval window ended: clean_job is queued
//   CLEANING    -> CLOSED       the agent removed container and volume (the hold went back at STOPPED)
//   STOPPING, CLEANING -> CLOSED     the machine vanished past grace + reconcile timeout: a STOPPING job's hold is
//                                released with what was charged so far
//
// Once a stop was asked for the job ends through STOPPED/CLEANING/CLOSED (never FAILED), so a repeated stop can
// always answer STOPPING or that terminal result. CLOSED and FAILED are final.

export const TRANSITIONS: Readonly<Record<JobState, readonly JobState[]>> = {
  RESERVED: ['STARTING', 'RUNNING', 'STOPPING', 'STOPPED', 'FAILED'],
  STARTING: ['RUNNING', 'STOPPING', 'STOPPED', 'FAILED'],
  RUNNING: ['STOPPING', 'STOPPED', 'RECONCILING', 'FAILED'],
  RECONCILING: ['RUNNING', 'STOPPING', 'STOPPED', 'FAILED'],
  STOPPING: ['STOPPED', 'CLOSED'],
  STOPPED: ['CLEANING'],
  CLEANING: ['CLOSED'],
  CLOSED: [],
  FAILED: [],
};

export function canTransition(from: JobState, to: JobState): boolean {
  return TRANSITIONS[from].includes(to);
}

export function assertTransition(from: JobState, to: JobState): void {
  if (!canTransition(from, to)) throw new Error(`job transition ${from} -> ${to} is not allowed`);
}

/** Why a job stopped, failed or closed: recorded on the job and in its events. */
export const CLOSE_REASONS = [
  'stopped_by_renter',
  'stopped_by_admin',
  'budget_exhausted',
  'duration_limit',
  'host_ceiling',
  'container_exited',
  'start_timeout',
  'launch_failed',
  'job_failed',
  'agent_lost',
  'machine_lost',
  'readiness_unverified',
  'gpu_lost',
] as const;
export type CloseReason = (typeof CLOSE_REASONS)[number];

/** States in which the job holds the machine's devices (a container exists or is coming). */
export const OCCUPYING_STATES: readonly JobState[] = ['RESERVED', 'STARTING', 'RUNNING', 'STOPPING', 'RECONCILING'];

/** States that end the job (the hold was released at STOPPED, FAILED or CLOSED, whichever came first). */
export const FINAL_STATES: readonly JobState[] = ['CLOSED', 'FAILED'];

/** States in which meter receipts are accepted (STOPPING takes the final receipt). */
export const METERING_STATES: readonly JobState[] = ['RUNNING', 'STOPPING'];

/** States from which a stop request moves the job to STOPPING. */
export const STOPPABLE_STATES: readonly JobState[] = ['RESERVED', 'STARTING', 'RUNNING', 'RECONCILING'];

/** States in which the budget may still be extended (contract: rejected once STOPPING begins). */
export const EXTENDABLE_STATES: readonly JobState[] = ['RESERVED', 'STARTING', 'RUNNING'];

/** The stop endpoint answers these as they are (contract part 3: STOPPING or the terminal result). */
export type StopAnswerState = 'STOPPING' | 'STOPPED' | 'CLEANING' | 'CLOSED';
export function stopAnswerOf(state: JobState): StopAnswerState | null {
  return state === 'STOPPING' || state === 'STOPPED' || state === 'CLEANING' || state === 'CLOSED' ? state : null;
}

/** The close reason a stop of a running job gets, by who asked. */
export function stopReasonOf(byAdmin: boolean): CloseReason {
  return byAdmin ? 'stopped_by_admin' : 'stopped_by_renter';
}
