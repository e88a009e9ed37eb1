import type { TelemetryMessage } from '@ark/shared';
import { iso } from '../../clock.js';
import { gpuVerdictOf } from '../../domain/jobs/gpu-health.js';
import type { Tx } from '../../store/db.js';
import { gpusHealthyAtOf, recordGpusHealthy } from '../../store/job-gpu-health.js';
import { machinesWithRunningJobs, runningGpuJobIdsOfMachine } from '../../store/jobs.js';
import type { JobDeps } from './deps.js';
import { holdJob } from './held-job.js';

/**
 * The telemetry hook (issue 24 item 3, a GPU lost per telemetry), inside the gateway's apply-once transaction, which
 * holds the machine's channel row: each RUNNING job of the machine that holds GPUs is checked against the batch
 * (domain/jobs/gpu-health.ts). A sample with all its GPUs moves the job's last GPU-healthy point forward; a sample
 * missing one (or empty samples for a minute: domain/jobs/gpu-health.ts) fails the job `gpu_lost` the way every failure does (held.fail: FAILED, the meter stops since FAILED
 * takes no receipts, the unspent hold goes back, clean_job tells the agent to stop and remove the container) and
 * credits the renter for the charges after that healthy point. A repeated batch finds the job FAILED and does
 * nothing; the job_credits row makes the credit once in any case. Answers the jobs it failed.
 */
export async function checkGpusFromTelemetry(
  deps: JobDeps,
  trx: Tx,
  machineId: string,
  msg: TelemetryMessage,
  now: Date,
): Promise<string[]> {
  const failed: string[] = [];
  for (const jobId of await runningGpuJobIdsOfMachine(trx, machineId)) {
    const held = await holdJob(deps, trx, jobId);
    const job = held?.job;
    if (!held || !job || job.state !== 'RUNNING' || job.machineId !== machineId || job.gpuPciAddresses.length === 0) continue;
    if (job.meterStartedAt === null) continue;
    const earlier = await gpusHealthyAtOf(trx, jobId);
    const verdict = gpuVerdictOf(job.gpuPciAddresses, msg.samples, job.meterStartedAt, now, earlier);
    if (verdict.healthyAt !== null) await recordGpusHealthy(trx, jobId, verdict.healthyAt);
    if (verdict.lostAt === null) continue;
    const healthyAt = verdict.healthyAt ?? earlier;
    await held.fail(
      'gpu_lost',
      now,
      { missing_gpus: verdict.missing, lost_at: iso(verdict.lostAt), gpus_healthy_at: healthyAt === null ? null : iso(healthyAt) },
      { healthyAt },
    );
    failed.push(jobId);
  }
  return failed;
}

/**
 * The telemetry hook for a group of machines' batches in one transaction: one query finds which of them run a job
 * at all (most machines are idle), and only their batches are checked, each as checkGpusFromTelemetry does.
 */
export async function checkGpusFromTelemetryGroup(
  deps: JobDeps,
  trx: Tx,
  batches: ReadonlyArray<{ machineId: string; msg: TelemetryMessage }>,
  now: Date,
): Promise<string[]> {
  const busy = await machinesWithRunningJobs(trx, [...new Set(batches.map((b) => b.machineId))]);
  const failed: string[] = [];
  for (const { machineId, msg } of batches) {
    if (busy.has(machineId)) failed.push(...(await checkGpusFromTelemetry(deps, trx, machineId, msg, now)));
  }
  return failed;
}
