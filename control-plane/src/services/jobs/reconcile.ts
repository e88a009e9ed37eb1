import type { HeartbeatMessage } from '@ark/shared';
import { STATUS_TRANSITION_MESSAGES } from '../../domain/jobs/agent-status.js';
import { jobIdsOfMachine } from '../../store/jobs.js';
import type { JobDeps } from './deps.js';
import { withJob } from './held-job.js';

/**
 * The heartbeat hook: a RECONCILING job whose container the agent lists as running under the job's fence goes back
 * to RUNNING. Cheap when nothing reconciles: one indexed read, and only when the agent lists running jobs.
 */
export async function reconcileFromHeartbeat(deps: JobDeps, machineId: string, msg: HeartbeatMessage, now: Date): Promise<number> {
  const running = msg.running_jobs.filter((j) => j.container_state === 'running');
  if (running.length === 0) return 0;
  const reconciling = new Set(await jobIdsOfMachine(deps.store.db, machineId, ['RECONCILING']));
  const listed = running.filter((j) => reconciling.has(j.job_id));
  let returned = 0;
  for (const job of listed) {
    const moved = await withJob(deps, job.job_id, async (held) => {
      if (held.job.state !== 'RECONCILING' || held.job.machineId !== machineId || BigInt(job.fence) !== held.job.fence) return false;
      await held.rebind(now, 'heartbeat', STATUS_TRANSITION_MESSAGES.rebind);
      return true;
    });
    if (moved) returned += 1;
  }
  return returned;
}
