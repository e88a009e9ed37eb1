import { iso } from '../clock.js';
import type { Executor, Tx } from './db.js';

// The last telemetry sample in which all of a RUNNING job's GPUs were present (services/jobs/gpu-health.ts). Written
// with the job row held, so read-then-write is safe; it only moves forward.

/** Records `at` as the job's last GPU-healthy point unless a later one is recorded. */
export async function recordGpusHealthy(trx: Tx, jobId: string, at: Date): Promise<void> {
  const known = await gpusHealthyAtOf(trx, jobId);
  if (known === null) {
    await trx
      .insertInto('job_gpu_health')
      .values({ job_id: jobId, healthy_at: iso(at) })
      .execute();
  } else if (known.getTime() < at.getTime()) {
    await trx
      .updateTable('job_gpu_health')
      .set({ healthy_at: iso(at) })
      .where('job_id', '=', jobId)
      .execute();
  }
}

/** The job's last GPU-healthy point; null when no telemetry showed all its GPUs while it ran. */
export async function gpusHealthyAtOf(db: Executor, jobId: string): Promise<Date | null> {
  const row = await db.selectFrom('job_gpu_health').select('healthy_at').where('job_id', '=', jobId).executeTakeFirst();
  return row === undefined ? null : new Date(row.healthy_at);
}
