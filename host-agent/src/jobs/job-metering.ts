// Metering while the job runs: a tick at least every exitWatchIntervalMs checks the container, has the
// confinement watch look at it (job-confinement.ts: limits and quotas), sends the periodic receipt when
// one is due, and ends the meter with the final receipt when the container stopped on its own, was
// stopped for a quota, or vanished. The arithmetic is meter.ts's; this part owns the timer.
import type { ContainerState } from '../runtime/container-runtime.js';
import type { JobAccessListener } from './job-access.js';
import { JobConfinement } from './job-confinement.js';
import { FAILURE_LOG_BYTES, FAILURE_LOG_LINES, type JobContext, type LiveJob, serial } from './job-context.js';
import { jobDetail } from './job-outbox.js';
import { enterPhase } from './job-phase.js';
import type { JobMessageBody } from './job-record.js';
import { nextMeterDelayMs, nextReceipt } from './meter.js';
import { errorText } from './text.js';

export class JobMetering {
  private readonly confinement: JobConfinement;

  constructor(
    private readonly context: JobContext,
    private readonly access: JobAccessListener,
  ) {
    this.confinement = new JobConfinement(context);
  }

  /** Arms the job's next tick: when the next receipt is due, or sooner to notice an exit. */
  schedule(job: LiveJob, afterFailure = false): void {
    const { clock, lifecycle, settings } = this.context;
    clock.clearTimeout(job.meterTimer);
    const record = job.record;
    if (
      lifecycle.closing ||
      record.phase !== 'ready' ||
      record.meter === undefined ||
      record.meter.final_sent ||
      record.launch === undefined
    )
      return;
    const dueMs = nextMeterDelayMs(record.meter, record.launch.meter_interval_s, clock.now());
    // After a failed check, wait a whole watch interval even when a receipt is overdue: an engine that keeps failing
    // is asked again at that pace, not in a busy loop.
    const delayMs = afterFailure ? settings.exitWatchIntervalMs : Math.min(dueMs, settings.exitWatchIntervalMs);
    job.meterTimer = clock.setTimeout(() => serial(this.context, job, () => this.tick(job)), delayMs);
  }

  /** Stops the job's ticks (a stop, a clean or a failure takes over the meter). */
  cancel(job: LiveJob): void {
    this.context.clock.clearTimeout(job.meterTimer);
  }

  /**
   * The job's next receipt (periodic, or the final one) for the run as Docker reports it, with the job's meter moved
   * past it; undefined when there is nothing to report. The caller commits it (alone, or with a status).
   */
  takeReceipt(job: LiveJob, run: ContainerState | undefined, final: boolean): JobMessageBody | undefined {
    const record = job.record;
    if (record.meter === undefined) return undefined;
    const next = nextReceipt({ jobId: record.job_id, fence: record.fence, meter: record.meter, now: this.context.clock.now(), run, final });
    if (next === undefined) return undefined;
    record.meter = next.meter;
    return next.receipt;
  }

  /** Checks the container; sends the periodic receipt when due, or the final one if the container is gone. */
  async tick(job: LiveJob): Promise<void> {
    const { clock, lifecycle, logger, outbox, runtime } = this.context;
    const record = job.record;
    if (lifecycle.closing || record.phase !== 'ready' || record.meter === undefined || record.launch === undefined) return;
    let state: ContainerState | undefined;
    try {
      state = await runtime.inspectContainer(record.container_id ?? record.container_name);
    } catch (error) {
      // Docker did not answer: no receipt now; the next one covers this time too.
      logger.warn({ job_id: record.job_id, error: errorText(error) }, 'container inspect failed');
      this.schedule(job, true);
      return;
    }
    job.containerState = state?.status ?? 'missing';
    if (state?.running === true) {
      if (job.ssh === undefined && record.ssh_port !== undefined) {
        // Access could not be restored after a restart (the port was busy): try again on every tick.
        await this.access
          .ensure(job, this.access.executionMode(job))
          .catch((error: unknown) => logger.warn({ job_id: record.job_id, error: errorText(error) }, 'job access still unavailable'));
      }
      if (!(await this.confinement.check(job, state))) {
        if (nextMeterDelayMs(record.meter, record.launch.meter_interval_s, clock.now()) === 0) {
          const receipt = this.takeReceipt(job, state, false);
          if (receipt !== undefined) await outbox.commit(job, [receipt]);
        }
        this.schedule(job);
        return;
      }
      // Stopped for a quota: the meter ends here as for any container that stopped.
      state = await runtime.inspectContainer(state.id).catch(() => state);
      job.containerState = state?.status ?? 'missing';
      if (state?.running === true) {
        this.schedule(job, true);
        return;
      }
    }
    // The container stopped on its own (or vanished): the meter ends with what really ran.
    const messages: JobMessageBody[] = [];
    const final = this.takeReceipt(job, state, true);
    if (final !== undefined) messages.push(final);
    job.ssh?.setMode({ kind: 'closed' });
    if (state === undefined) {
      enterPhase(record, 'container_vanished');
      record.failure = 'the container disappeared while the job ran';
      messages.push(outbox.status(record, 'failed', { detail: record.failure }));
    } else {
      await this.confinement.exitEvents(job, state);
      enterPhase(record, 'container_exited');
      if (state.exitCode !== undefined) record.exit_code = state.exitCode;
      const logs = await runtime.containerLogs(state.id, { tailLines: FAILURE_LOG_LINES, maxBytes: FAILURE_LOG_BYTES }).catch(() => '');
      const why = this.confinement.stopDetail(job) ?? (state.oomKilled === true ? 'killed for going past its memory limit' : undefined);
      const lines = [...(why !== undefined ? [why] : []), ...(logs.trim() !== '' ? [`last output:\n${logs.trim()}`] : [])];
      messages.push(
        outbox.status(record, 'exited', {
          ...(state.exitCode !== undefined ? { exit_code: state.exitCode } : {}),
          ...(lines.length > 0 ? { detail: jobDetail(record, lines.join('; ')) } : {}),
        }),
      );
    }
    await outbox.commit(job, messages);
  }
}
