// Stop and cleanup. A stop stops the container (grace, then SIGKILL), records the final receipt, opens
// the retrieval window and reports stopped, in that order. A clean stops a running job first (so its
// final receipt goes out before anything is removed), then removes the container, the volume, the
// host key and any retrieval copy, retrying a failed removal with backoff, and reports cleaned.
import type { ContainerState } from '../runtime/container-runtime.js';
import type { JobAccessListener } from './job-access.js';
import { hostKeys, type JobContext, type LiveJob, serial } from './job-context.js';
import type { JobMetering } from './job-metering.js';
import { enterPhase, statusOfPhase } from './job-phase.js';
import type { JobRetrieval } from './job-retrieval.js';
import { errorText } from './text.js';

const CLEAN_RETRY_MAX = 5;

export class JobStopper {
  constructor(
    private readonly context: JobContext,
    private readonly access: JobAccessListener,
    private readonly metering: JobMetering,
    private readonly retrieval: JobRetrieval,
  ) {}

  async stop(job: LiveJob): Promise<void> {
    const { clock, lifecycle, logger, outbox, runtime, settings } = this.context;
    await job.launch?.done;
    const record = job.record;
    const stop = record.stop;
    if (stop === undefined || lifecycle.closing) return;
    if (record.phase === 'stopped' || record.phase === 'cleaned' || record.phase === 'failed') {
      // A repeated stop is answered with where the job already is.
      const status = statusOfPhase(record.phase);
      if (status !== undefined)
        await outbox.commit(job, [outbox.status(record, status, record.failure !== undefined ? { detail: record.failure } : {})]);
      return;
    }
    if (record.phase === 'cleaning') return;
    if (record.phase !== 'stopping') {
      enterPhase(record, 'stop_started');
      await outbox.commit(job);
    }
    this.metering.cancel(job);
    job.ssh?.setMode({ kind: 'closed' });
    let state: ContainerState | undefined;
    if (record.container_id !== undefined) {
      try {
        await runtime.stopContainer(record.container_id, settings.stopGraceS);
      } catch (error) {
        logger.warn({ job_id: record.job_id, error: errorText(error) }, 'docker stop failed');
      }
      state = await runtime.inspectContainer(record.container_id).catch(() => undefined);
      job.containerState = state?.status ?? 'missing';
    }
    if (record.meter !== undefined && !record.meter.final_sent) {
      const final = this.metering.takeReceipt(job, state, true);
      if (final !== undefined) await outbox.commit(job, [final]);
    }
    // The files are served before STOPPED is announced, so the renter can fetch them at once.
    const root = stop.retrieval_window_s > 0 ? await this.retrieval.prepare(job) : undefined;
    const now = clock.now();
    enterPhase(record, 'stop_finished');
    record.stopped_at = now.toISOString();
    record.retrieval_until = new Date(now.getTime() + stop.retrieval_window_s * 1000).toISOString();
    if (state?.exitCode !== undefined && record.exit_code === undefined) record.exit_code = state.exitCode;
    try {
      await this.retrieval.serve(job, root);
    } catch (error) {
      // The SSH port taken (by another process since a restart): the stop still completes, without retrieval.
      logger.warn({ job_id: record.job_id, error: errorText(error) }, 'job files cannot be served for retrieval');
      await this.access.close(job);
    }
    await outbox.commit(job, [
      outbox.status(record, 'stopped', { ...(record.exit_code !== undefined ? { exit_code: record.exit_code } : {}) }),
    ]);
  }

  async clean(job: LiveJob): Promise<void> {
    const { clock, lifecycle, logger, outbox, runtime, store } = this.context;
    await job.launch?.done;
    const record = job.record;
    if (lifecycle.closing) return;
    if (record.phase === 'cleaned') {
      await outbox.commit(job, [outbox.status(record, 'cleaned')]);
      return;
    }
    // A running job is stopped first, so its final receipt is sent before anything is removed.
    if (record.phase !== 'stopped' && record.phase !== 'failed' && record.phase !== 'cleaning' && record.phase !== 'exited') {
      await this.stop(job);
    }
    if (record.phase !== 'cleaning') {
      enterPhase(record, 'clean_started');
      await outbox.commit(job);
    }
    this.metering.cancel(job);
    this.retrieval.cancel(job);
    await this.access.close(job);
    try {
      await runtime.removeContainer(record.container_id ?? record.container_name);
      await runtime.removeVolume(record.volume_name);
    } catch (error) {
      job.cleanAttempts += 1;
      logger.warn({ job_id: record.job_id, attempt: job.cleanAttempts, error: errorText(error) }, 'clean failed');
      if (job.cleanAttempts < CLEAN_RETRY_MAX && !lifecycle.closing) {
        clock.clearTimeout(job.cleanTimer);
        job.cleanTimer = clock.setTimeout(() => serial(this.context, job, () => this.clean(job)), 1000 * 2 ** job.cleanAttempts);
      }
      return;
    }
    await (await hostKeys()).removeHostKey(store.hostKeyPath(record.job_id));
    await this.retrieval.removeCopy(record.job_id);
    // The logs were kept through the retrieval window; the clean ends them with the rest of the job.
    await this.context.logs.remove(record.job_id);
    enterPhase(record, 'clean_finished');
    // The launch command holds the job's environment and engine key; nothing needs them any more.
    record.launch = undefined;
    await outbox.commit(job, [outbox.status(record, 'cleaned')]);
  }
}
