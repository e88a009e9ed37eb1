import { iso } from '../clock.js';
import { compiledOnce } from './compiled.js';
import type { Executor, Tx } from './db.js';

// The last telemetry sample in which all of a RUNNING job's GPUs were present (services/jobs/gpu-health.ts). Written
// with the job row held, so read-then-write is safe; it only moves forward.

/** Records `at` as the job's last GPU-healthy point unless a later one is recorded. */
export async function recordGpusHealthy(trx: Tx, jobId: string, at: Date): Promise<void> {
  await upsertHealthy(trx, jobId, iso(at));
}

// Both run for every telemetry batch of a machine with a running job: compiled once (store/compiled.ts). The times
// are RFC 3339 at the millisecond in UTC (iso), so comparing them as text compares them as times.
const upsertHealthy = compiledOnce((db, jobId: string, at: string) =>
  db
    .insertInto('job_gpu_health')
    .values({ job_id: jobId, healthy_at: at })
    .onConflict((oc) => oc.column('job_id').doUpdateSet({ healthy_at: at }).where('job_gpu_health.healthy_at', '<', at)),
);
const healthyAtOf = compiledOnce((db, jobId: string) => db.selectFrom('job_gpu_health').select('healthy_at').where('job_id', '=', jobId));

/** The job's last GPU-healthy point; null when no telemetry showed all its GPUs while it ran. */
export async function gpusHealthyAtOf(db: Executor, jobId: string): Promise<Date | null> {
  const row = (await healthyAtOf(db, jobId)).rows[0];
  return row === undefined ? null : new Date(row.healthy_at);
}
