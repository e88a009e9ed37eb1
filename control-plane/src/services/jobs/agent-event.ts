import type { JobEventMessage } from '@ark/shared';
import { jobEventOf } from '../../domain/jobs/agent-event.js';
import type { Tx } from '../../store/db.js';
import type { JobDeps } from './deps.js';
import { holdJob } from './held-job.js';

/**
 * The 'job_event' handler: applied once per message id inside the gateway's transaction (which holds the machine's
 * channel row). What the agent's confinement did to a job becomes one of the job's events (its text redacted of the
 * job's secrets like every agent text); nothing else of the job changes.
 */
export async function applyJobEvent(deps: JobDeps, trx: Tx, machineId: string, msg: JobEventMessage, now: Date): Promise<void> {
  const held = await holdJob(deps, trx, msg.job_id);
  // Another machine's job (or an unknown one): nothing of it is touched, nothing is told.
  if (!held || held.job.machineId !== machineId) return;
  const event = jobEventOf(held.job, { kind: msg.kind, fence: BigInt(msg.fence), at: msg.at, message: msg.message, data: msg.data });
  await held.events([event], now);
}
