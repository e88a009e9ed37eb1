import type { JobEventMessage } from '@ark/shared';
import type { StatusEvent } from './agent-status.js';

// What the control plane records when an agent reports what its confinement did to a job (an OOM kill, the pids
// limit reached, an included quota warned of or exceeded). Pure: the caller holds the job and appends the event. The
// job's state is not touched here: a job the agent stopped for a quota ends through its 'exited' status, as any
// container that stopped.

export interface JobEventReport {
  kind: JobEventMessage['kind'];
  fence: bigint;
  at: string;
  message: string;
  data: JobEventMessage['data'];
}

/** The event to append: the agent's own under its kind, or a refusal when it came under another fence. */
export function jobEventOf(job: { fence: bigint }, report: JobEventReport): StatusEvent {
  if (report.fence !== job.fence) {
    const which = report.fence < job.fence ? 'stale' : 'unknown';
    return {
      kind: 'event_refused',
      message: `Agent event "${report.kind}" refused: ${which} fence ${report.fence} (the job is at ${job.fence}).`,
      data: { event: report.kind, fence: report.fence.toString(), current_fence: job.fence.toString() },
    };
  }
  return { kind: report.kind, message: report.message, data: { ...report.data, agent_at: report.at } };
}
