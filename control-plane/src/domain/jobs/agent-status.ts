import type { JobState, JobStatusMessage } from '@ark/shared';
import type { CloseReason } from './states.js';

// What the control plane does about an agent's job status report (DESIGN.md "Job runtime on the host"). Pure: the
// caller passes the job's state and fence and the report, and applies the steps in order (services/jobs/agent-status.ts).
// The table below is the whole lifecycle as the agent drives it; states.ts says which transitions exist at all.

export type AgentJobStatus = JobStatusMessage['status'];

/** exit_code and detail, when the agent gave them: recorded with whatever the report causes. */
export interface StatusOutcome {
  exit_code?: number;
  detail?: string;
}

export interface StatusReport {
  status: AgentJobStatus;
  fence: bigint;
  outcome: StatusOutcome;
  /** Whether the report carries access details, or the job has them from an earlier readiness. */
  accessKnown: boolean;
}

export interface StatusEvent {
  kind: string;
  message: string;
  data: Record<string, unknown>;
}

/** One thing to do; a reaction is a list of them, applied in order, each to the job as the previous left it. */
export type StatusStep =
  /** RESERVED -> STARTING. */
  | { step: 'accept' }
  /** Record pull progress when it moved far enough (pullProgressToRecord). */
  | { step: 'pull_progress' }
  | { step: 'event'; event: StatusEvent }
  /** -> RUNNING at the reported instant: the meter starts, access is stored, a template job qualifies the machine. */
  | { step: 'start_meter' }
  /** RUNNING with a newer access report: store it. */
  | { step: 'refresh_access' }
  /** RECONCILING -> RUNNING under a new fence (launch_job again, read by the agent as a rebind). */
  | { step: 'rebind' }
  /** -> STOPPING and stop_job. */
  | { step: 'begin_stop'; reason: CloseReason }
  /** -> FAILED: the hold is released, clean_job queued. */
  | { step: 'fail'; reason: CloseReason; data: Record<string, unknown> }
  /** -> STOPPED at the reported instant, never before `floor`: the unspent hold is released. */
  | { step: 'stopped'; floor: 'created' | 'stop_requested'; data: Record<string, unknown> }
  /** STOPPED -> CLEANING: the agent cleaned before the retrieval window ended. */
  | { step: 'clean_early' }
  /** -> CLOSED: the hold is released if it was not at STOPPED. */
  | { step: 'close' };

export type StatusReaction = { outcome: 'refused'; event: StatusEvent } | { outcome: 'apply'; steps: readonly StatusStep[] };

/** Messages of the transitions the table makes (the job's state_changed events). */
export const STATUS_TRANSITION_MESSAGES = {
  accept: 'The machine accepted the launch.',
  start_meter: 'Running: readiness verified, the meter started.',
  rebind: 'The machine is back with the container running; the job is rebound with a new fence.',
  clean_early: 'The machine cleaned the job early.',
} as const;

/** A step as the table writes it: `outcome` marks where the report's exit code and detail go. */
type Row = readonly TableStep[];
type TableStep =
  | Exclude<StatusStep, { step: 'event' } | { step: 'fail' } | { step: 'stopped' }>
  | { step: 'event'; event: 'container_starting' | 'container_exited' | 'agent_failure' | 'readiness_ignored' }
  | { step: 'fail'; reason: CloseReason }
  | { step: 'stopped'; floor: 'created' | 'stop_requested'; withOutcome: boolean };

const ACCEPT = { step: 'accept' } as const;
const running = (then: Row): Record<'RUNNING' | 'RECONCILING', Row> => ({ RUNNING: then, RECONCILING: then });
const waiting = (then: Row): Record<'RESERVED' | 'STARTING', Row> => ({ RESERVED: then, STARTING: then });

/**
 * (agent status, job state) -> steps. A state not listed takes `otherwise`, or nothing (the report changes nothing
 * and is not worth an event). Readiness without access details is refused before the table (reactToStatus).
 */
const TABLE: Record<AgentJobStatus, Partial<Record<JobState | 'otherwise', Row>>> = {
  accepted: { RESERVED: [ACCEPT] },
  // Any first launch status counts as the acceptance the agent may not have sent.
  pulling: { RESERVED: [ACCEPT, { step: 'pull_progress' }], STARTING: [{ step: 'pull_progress' }] },
  starting: {
    RESERVED: [ACCEPT, { step: 'event', event: 'container_starting' }],
    STARTING: [{ step: 'event', event: 'container_starting' }],
  },
  ready: {
    RESERVED: [ACCEPT, { step: 'start_meter' }],
    STARTING: [{ step: 'start_meter' }],
    RUNNING: [{ step: 'refresh_access' }],
    RECONCILING: [{ step: 'rebind' }, { step: 'refresh_access' }],
    otherwise: [{ step: 'event', event: 'readiness_ignored' }],
  },
  exited: {
    ...running([
      { step: 'event', event: 'container_exited' },
      { step: 'begin_stop', reason: 'container_exited' },
    ]),
    ...waiting([{ step: 'fail', reason: 'launch_failed' }]),
    otherwise: [{ step: 'event', event: 'container_exited' }],
  },
  failed: {
    ...waiting([{ step: 'fail', reason: 'launch_failed' }]),
    ...running([{ step: 'fail', reason: 'job_failed' }]),
    // A stop was asked for: the job ends the normal way, with the failure on record.
    STOPPING: [
      { step: 'event', event: 'agent_failure' },
      { step: 'stopped', floor: 'created', withOutcome: false },
    ],
  },
  stopped: {
    ...waiting([{ step: 'stopped', floor: 'stop_requested', withOutcome: true }]),
    ...running([{ step: 'stopped', floor: 'stop_requested', withOutcome: true }]),
    STOPPING: [{ step: 'stopped', floor: 'stop_requested', withOutcome: true }],
  },
  cleaned: {
    STOPPED: [{ step: 'clean_early' }, { step: 'close' }],
    CLEANING: [{ step: 'close' }],
    STOPPING: [{ step: 'close' }],
  },
};

/**
 * Decides one status report. The fence first: a report under another fence changes nothing and is recorded as
 * refused (a stale agent session, or a fence never issued). Then readiness without a way in, which is no readiness
 * for a renter. Then the table.
 */
export function reactToStatus(job: { state: JobState; fence: bigint }, report: StatusReport): StatusReaction {
  if (report.fence !== job.fence) {
    const which = report.fence < job.fence ? 'stale' : 'unknown';
    return {
      outcome: 'refused',
      event: {
        kind: 'status_refused',
        message: `Agent status "${report.status}" refused: ${which} fence ${report.fence} (the job is at ${job.fence}).`,
        data: { status: report.status, fence: report.fence.toString(), current_fence: job.fence.toString() },
      },
    };
  }
  if (report.status === 'ready' && (job.state === 'RESERVED' || job.state === 'STARTING') && !report.accessKnown) {
    const event = {
      kind: 'status_refused',
      message: 'Readiness refused: the agent reported no access details.',
      data: { status: 'ready' },
    };
    return { outcome: 'apply', steps: [{ step: 'event', event }] };
  }
  const row = TABLE[report.status] ?? {};
  const steps = row[job.state] ?? row.otherwise ?? [];
  return { outcome: 'apply', steps: steps.map((s) => withReport(s, job.state, report.outcome)) };
}

function withReport(step: TableStep, state: JobState, outcome: StatusOutcome): StatusStep {
  switch (step.step) {
    case 'event':
      return { step: 'event', event: statusEvent(step.event, state, outcome) };
    case 'fail':
      return { step: 'fail', reason: step.reason, data: { ...outcome } };
    case 'stopped':
      return { step: 'stopped', floor: step.floor, data: step.withOutcome ? { ...outcome } : {} };
    default:
      return step;
  }
}

function statusEvent(name: Extract<TableStep, { step: 'event' }>['event'], state: JobState, outcome: StatusOutcome): StatusEvent {
  switch (name) {
    case 'container_starting':
      return { kind: 'container_starting', message: 'The image is pulled; the container is starting.', data: {} };
    case 'container_exited':
      return { kind: 'container_exited', message: 'The container exited.', data: { ...outcome } };
    case 'agent_failure':
      return { kind: 'agent_failure', message: 'The machine reported a failure while stopping.', data: { ...outcome } };
    case 'readiness_ignored':
      return { kind: 'status_ignored', message: `Readiness reported while the job is ${state}; ignored.`, data: { status: 'ready' } };
  }
}

/** The report's exit code and detail, as far as the agent sent them. */
export function outcomeOf(msg: Pick<JobStatusMessage, 'exit_code' | 'detail'>): StatusOutcome {
  return {
    ...(msg.exit_code !== undefined ? { exit_code: msg.exit_code } : {}),
    ...(msg.detail !== undefined ? { detail: msg.detail } : {}),
  };
}

/**
 * Pull progress worth an event: one per 10 points, and the end. Returns the percentage to record, or null to record
 * nothing.
 */
export function pullProgressToRecord(last: number | null, reported: number | undefined): number | null {
  const pct = reported ?? null;
  if (pct === null || (last !== null && pct < last + 10 && !(pct === 100 && last !== 100))) return null;
  return pct;
}

/** An instant the agent reported, never later than now nor earlier than `floor` (an unreadable one is now). */
export function agentInstant(reported: string, now: Date, floor: Date): Date {
  const at = new Date(reported);
  if (Number.isNaN(at.getTime())) return now;
  const clamped = at.getTime() <= now.getTime() ? at : now;
  return clamped.getTime() >= floor.getTime() ? clamped : floor;
}
