// Recovery after a restart: the job records are loaded (cleaned ones past retention dropped) and each
// job is reconciled with Docker, whose containers kept running while the agent was down. A clean or
// stop that was under way is finished, an interrupted launch is redone, a ready job gets its SSH
// listener back and its meter resumes (at once when a receipt is overdue), and a stopped job inside
// its retrieval window serves its files again. Containers without a record are reported.
import { JOB_LABEL, type JobContext, type LiveJob, liveJob, serial } from './job-context.js';
import type { JobAccessListener } from './job-access.js';
import type { JobLaunch } from './job-launch.js';
import type { JobMetering } from './job-metering.js';
import type { JobRetrieval } from './job-retrieval.js';
import type { JobStopper } from './job-stop.js';
import { errorText } from './text.js';

export type JobRecoveryParts = {
  access: JobAccessListener;
  launch: JobLaunch;
  metering: JobMetering;
  retrieval: JobRetrieval;
  stopper: JobStopper;
};

export class JobRecovery {
  private orphanSweepDeferred = false;

  constructor(
    private readonly context: JobContext,
    private readonly parts: JobRecoveryParts,
  ) {}

  /** Loads persisted jobs and reconciles each with Docker: SSH re-opened, metering resumed, interrupted work redone. */
  async recover(): Promise<void> {
    const { clock, jobs, logger, outbox, settings, store } = this.context;
    const records = await store.loadAll();
    for (const record of records) {
      if (record.phase === 'cleaned' && clock.now().getTime() - new Date(record.updated_at).getTime() > settings.cleanedRetentionMs) {
        await store.remove(record.job_id);
        continue;
      }
      jobs.set(record.job_id, liveJob(record));
    }
    // With nothing live to reconcile, the orphan sweep waits for the first job command: an idle agent then
    // makes no Docker call and never loads the Docker client. Orphans are only reported, so nothing is lost.
    if ([...jobs.values()].every((job) => job.record.phase === 'cleaned')) this.orphanSweepDeferred = true;
    else await this.reportOrphans();
    for (const job of jobs.values()) {
      await outbox.flush(job);
      await this.resume(job).catch((error: unknown) =>
        logger.error({ job_id: job.record.job_id, error: errorText(error) }, 'could not resume job'),
      );
    }
  }

  /** Picks one job up where its record says it was. */
  async resume(job: LiveJob): Promise<void> {
    const { access, launch, metering, retrieval, stopper } = this.parts;
    const { clock, logger, runtime } = this.context;
    const record = job.record;
    // The container's output resumes where the kept log ends: what it wrote while the agent was down comes from Docker's
    // own log, and a running one is followed again.
    if (
      record.clean_requested_at === undefined &&
      record.container_id !== undefined &&
      !['accepted', 'pulling', 'starting', 'cleaning', 'cleaned'].includes(record.phase)
    ) {
      this.context.logs.attach(job);
    }
    if (record.clean_requested_at !== undefined && record.phase !== 'cleaned') {
      void serial(this.context, job, () => stopper.clean(job));
      return;
    }
    if (record.stop !== undefined && !['stopped', 'cleaning', 'cleaned', 'failed'].includes(record.phase)) {
      void serial(this.context, job, () => stopper.stop(job));
      return;
    }
    switch (record.phase) {
      case 'accepted':
      case 'pulling':
      case 'starting':
        launch.start(job);
        return;
      case 'ready': {
        try {
          const state = await runtime.inspectContainer(record.container_id ?? record.container_name);
          job.containerState = state?.status ?? 'missing';
          if (state?.running === true) await access.ensure(job, access.executionMode(job));
        } catch (error) {
          // Docker not answering yet, or the SSH port taken: metering goes on regardless.
          logger.warn({ job_id: record.job_id, error: errorText(error) }, 'could not restore job access');
        }
        // The first tick comes at once when a receipt is overdue; a stopped container gets its final receipt.
        void serial(this.context, job, () => metering.tick(job));
        return;
      }
      case 'stopped':
        if (new Date(record.retrieval_until ?? 0).getTime() > clock.now().getTime())
          await retrieval.serve(job, await retrieval.prepare(job));
        return;
      default:
        return;
    }
  }

  /** Runs the orphan sweep that recover() left for the first job command, in the background. */
  sweepDeferredOrphans(): void {
    if (!this.orphanSweepDeferred) return;
    this.orphanSweepDeferred = false;
    void this.reportOrphans();
  }

  private async reportOrphans(): Promise<void> {
    const { jobs, logger, runtime } = this.context;
    try {
      for (const container of await runtime.listContainers(JOB_LABEL)) {
        const jobId = container.labels[JOB_LABEL] ?? '';
        if (!jobs.has(jobId)) {
          logger.warn(
            { job_id: jobId.slice(0, 64), container: container.id, status: container.status },
            'job container without a job record',
          );
        }
      }
    } catch (error) {
      logger.warn({ error: errorText(error) }, 'could not list job containers');
    }
  }
}
