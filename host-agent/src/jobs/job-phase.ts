// The job's phase as a transition table, pure: which event moves which phase where. The supervisor's
// parts change a phase only through here, so a change the table does not allow is refused loudly
// instead of quietly corrupting a record.
import type { JobPhase, JobRecord, JobStatus } from './job-record.js';

export type JobPhaseEvent =
  /** The image is being fetched (or looked up under its digest). */
  | 'pull_started'
  /** The image is present under its digest; container and access are being prepared. */
  | 'image_ready'
  /** Readiness verified: the meter starts. */
  | 'readiness_verified'
  /** The launch cannot complete (or its ready record could not be written). */
  | 'launch_failed'
  /** The running container ended by itself. */
  | 'container_exited'
  /** The running container disappeared from Docker. */
  | 'container_vanished'
  /** stop_job (or clean_job) began stopping the job. */
  | 'stop_started'
  /** The container is stopped and the final receipt recorded. */
  | 'stop_finished'
  /** clean_job began removing the container, the volume and the host key. */
  | 'clean_started'
  /** Everything of the job is removed. */
  | 'clean_finished';

const ALL_PHASES: readonly JobPhase[] = [
  'accepted',
  'pulling',
  'starting',
  'ready',
  'exited',
  'stopping',
  'stopped',
  'cleaning',
  'cleaned',
  'failed',
];

/** For each event: the phases it may start from, and where it leads. */
const TRANSITIONS: Readonly<Record<JobPhaseEvent, { from: readonly JobPhase[]; to: JobPhase }>> = {
  pull_started: { from: ['accepted'], to: 'pulling' },
  image_ready: { from: ['accepted', 'pulling'], to: 'starting' },
  readiness_verified: { from: ['starting'], to: 'ready' },
  // From ready too: the ready record may fail to be written, and the launch then fails.
  launch_failed: { from: ['accepted', 'pulling', 'starting', 'ready'], to: 'failed' },
  container_exited: { from: ['ready'], to: 'exited' },
  container_vanished: { from: ['ready'], to: 'failed' },
  stop_started: { from: ['accepted', 'pulling', 'starting', 'ready', 'exited'], to: 'stopping' },
  stop_finished: { from: ['stopping'], to: 'stopped' },
  // From any phase but the end: a clean whose stop was cut short by the agent closing still removes everything.
  clean_started: { from: ALL_PHASES.filter((phase) => phase !== 'cleaning' && phase !== 'cleaned'), to: 'cleaning' },
  clean_finished: { from: ['cleaning'], to: 'cleaned' },
};

export type PhaseTransition = { ok: true; phase: JobPhase } | { ok: false; reason: string };

/** The phase `event` leads to from `phase`, or why it may not happen there. */
export function nextPhase(phase: JobPhase, event: JobPhaseEvent): PhaseTransition {
  const transition = TRANSITIONS[event];
  if (transition.from.includes(phase)) return { ok: true, phase: transition.to };
  return { ok: false, reason: `${event} cannot happen to a job that is ${phase}` };
}

export class JobPhaseRefusedError extends Error {
  constructor(
    readonly jobId: string,
    readonly phase: JobPhase,
    readonly event: JobPhaseEvent,
    reason: string,
  ) {
    super(`job ${jobId}: ${reason}`);
    this.name = 'JobPhaseRefusedError';
  }
}

/** Moves the record to the phase `event` leads to; throws when the table refuses it. */
export function enterPhase(record: JobRecord, event: JobPhaseEvent): JobPhase {
  const next = nextPhase(record.phase, event);
  if (!next.ok) throw new JobPhaseRefusedError(record.job_id, record.phase, event, next.reason);
  record.phase = next.phase;
  return next.phase;
}

/** The wire status that announces a phase again (stopping and cleaning have none of their own). */
export function statusOfPhase(phase: JobPhase): JobStatus | undefined {
  switch (phase) {
    case 'stopping':
    case 'cleaning':
      return undefined;
    default:
      return phase;
  }
}
