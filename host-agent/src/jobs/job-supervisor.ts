// The host side of a rental: launch_job, stop_job and clean_job commands become a container on the
// local Docker engine, an SSH listener, job_status messages and meter receipts. Every state change is
// written to `<stateDir>/jobs/<job_id>.json` before its message is handed to the channel, so a
// restarted agent picks each job up where it was: SSH keeps answering, metering resumes with the
// next meter_seq, and no period is reported twice.
//
// This file is the coordinator: it applies commands (fences included) and answers for the whole. The
// work is done by one part per concern, all sharing one JobContext: launch and readiness
// (job-launch.ts), metering (job-metering.ts), stop and cleanup (job-stop.ts), retrieval access
// (job-retrieval.ts), recovery after a restart (job-recovery.ts), the SSH listener (job-access.ts),
// the container's logs (job-logs.ts) and the record-then-send outbox (job-outbox.ts).
import type { CleanJobBody, CommandMessage, LaunchJobBody, LogsCancelMessage, LogsOpenMessage, StopJobBody } from '@ark/shared';
import { JobAccessListener } from './job-access.js';
import { type EngineTarget, engineContainerPort } from './engine-relay.js';
import { createJobContext, type JobContext, type JobSupervisorOptions, type LiveJob, liveJob, serial } from './job-context.js';
import { JobLaunch } from './job-launch.js';
import type { LogsSend } from './job-logs.js';
import { JobMetering } from './job-metering.js';
import { jobAccess } from './job-outbox.js';
import { statusOfPhase } from './job-phase.js';
import { ACTIVE_PHASES, JOB_RECORD_VERSION, type JobRecord, type JobStatusBody } from './job-record.js';
import { JobRecovery } from './job-recovery.js';
import { JobRetrieval } from './job-retrieval.js';
import { JobStopper } from './job-stop.js';
import { isJobId } from './job-store.js';
import { boundedText } from './text.js';

export { JOB_LABEL, type JobSupervisorLogger, type JobSupervisorOptions } from './job-context.js';

export type JobCommand =
  | { kind: 'launch_job'; body: LaunchJobBody }
  | { kind: 'stop_job'; body: StopJobBody }
  | { kind: 'clean_job'; body: CleanJobBody };

/** One entry of HeartbeatMessage.running_jobs. */
export type RunningJob = { job_id: string; fence: string; container_state: string };

const CLOSE_WAIT_MS = 30_000;
const RUNNING_JOBS_MAX = 64;
const SETTLE_ROUNDS_MAX = 1_000;

function fenceOrder(a: string, b: string): number {
  const left = BigInt(a);
  const right = BigInt(b);
  return left < right ? -1 : left > right ? 1 : 0;
}

export class JobSupervisor {
  private readonly context: JobContext;
  private readonly access: JobAccessListener;
  private readonly launch: JobLaunch;
  private readonly stopper: JobStopper;
  private readonly recovery: JobRecovery;
  private readonly jobs: Map<string, LiveJob>;
  private started = false;

  constructor(options: JobSupervisorOptions) {
    this.context = createJobContext(options);
    this.jobs = this.context.jobs;
    this.access = new JobAccessListener(this.context);
    const metering = new JobMetering(this.context, this.access);
    const retrieval = new JobRetrieval(this.context, this.access);
    this.launch = new JobLaunch(this.context, this.access, metering);
    this.stopper = new JobStopper(this.context, this.access, metering, retrieval);
    this.recovery = new JobRecovery(this.context, { access: this.access, launch: this.launch, metering, retrieval, stopper: this.stopper });
  }

  /** Loads persisted jobs and reconciles each with Docker: SSH re-opened, metering resumed, interrupted work redone. */
  async start(): Promise<void> {
    if (this.started) throw new Error('JobSupervisor already started');
    this.started = true;
    await this.recovery.recover();
  }

  /**
   * Applies one command (a channel CommandMessage can be passed as it is). Resolves once the command is
   * durably recorded; the work goes on in the background and reports through the channel.
   */
  async handleCommand(command: JobCommand | CommandMessage): Promise<void> {
    switch (command.kind) {
      case 'launch_job':
        return this.launchJob(command.body);
      case 'stop_job':
        return this.stopJob(command.body);
      case 'clean_job':
        return this.cleanJob(command.body);
      default:
        throw new Error(`JobSupervisor does not handle ${command.kind}`);
    }
  }

  async launchJob(body: LaunchJobBody): Promise<void> {
    this.assertOpen();
    this.recovery.sweepDeferredOrphans();
    if (!isJobId(body.job_id)) throw new Error('launch_job: job_id is not a UUID');
    const existing = this.jobs.get(body.job_id);
    if (existing !== undefined) {
      await this.rebind(existing, body.fence, 'launch_job');
      return;
    }
    const now = this.context.clock.now().toISOString();
    const name = `ark-job-${body.job_id}`;
    const record: JobRecord = {
      version: JOB_RECORD_VERSION,
      job_id: body.job_id,
      fence: body.fence,
      phase: 'accepted',
      launch: body,
      accepted_at: now,
      updated_at: now,
      container_name: name,
      volume_name: name,
      outbox: [],
    };
    const job = liveJob(record);
    this.jobs.set(body.job_id, job);
    await this.context.outbox.commit(job, [this.context.outbox.status(record, 'accepted')]);
    this.launch.start(job);
  }

  async stopJob(body: StopJobBody): Promise<void> {
    this.assertOpen();
    this.recovery.sweepDeferredOrphans();
    const job = this.jobs.get(body.job_id);
    if (job === undefined) {
      // Nothing of this job is here (never launched, or long cleaned): say so, and the control plane moves on.
      await this.context.outbox.sendBare(body.job_id, body.fence, 'stopped', 'the job is not on this machine');
      return;
    }
    if (!(await this.rebind(job, body.fence, 'stop_job', false))) return;
    const record = job.record;
    if (record.stop === undefined && record.phase !== 'cleaning' && record.phase !== 'cleaned') {
      record.stop = {
        reason: boundedText(body.reason, 500),
        retrieval_window_s: body.retrieval_window_s,
        requested_at: this.context.clock.now().toISOString(),
      };
      await this.context.outbox.commit(job);
    }
    job.launch?.controller.abort();
    void serial(this.context, job, () => this.stopper.stop(job));
  }

  async cleanJob(body: CleanJobBody): Promise<void> {
    this.assertOpen();
    this.recovery.sweepDeferredOrphans();
    if (!isJobId(body.job_id)) throw new Error('clean_job: job_id is not a UUID');
    const job = this.jobs.get(body.job_id);
    if (job === undefined) {
      const name = `ark-job-${body.job_id}`;
      await this.context.runtime.removeContainer(name).catch(() => undefined);
      await this.context.runtime.removeVolume(name).catch(() => undefined);
      await this.context.outbox.sendBare(body.job_id, body.fence, 'cleaned');
      return;
    }
    if (!(await this.rebind(job, body.fence, 'clean_job', false))) return;
    if (job.record.phase !== 'cleaned' && job.record.phase !== 'cleaning') {
      job.record.stop ??= { reason: 'cleaned', retrieval_window_s: 0, requested_at: this.context.clock.now().toISOString() };
      job.record.clean_requested_at ??= this.context.clock.now().toISOString();
      await this.context.outbox.commit(job);
    }
    job.launch?.controller.abort();
    void serial(this.context, job, () => this.stopper.clean(job));
  }

  /** Jobs whose container is running or being prepared, for HeartbeatMessage.running_jobs. */
  runningJobs(): RunningJob[] {
    const running: RunningJob[] = [];
    for (const job of this.jobs.values()) {
      if (!ACTIVE_PHASES.has(job.record.phase)) continue;
      const state = job.record.phase === 'ready' || job.record.phase === 'stopping' ? (job.containerState ?? 'running') : job.record.phase;
      running.push({ job_id: job.record.job_id, fence: job.record.fence, container_state: state.slice(0, 32) });
      if (running.length >= RUNNING_JOBS_MAX) break;
    }
    return running;
  }

  /** Where the engine of a model job that is ready here under `fence` answers, for the relay; undefined otherwise. */
  engineTarget(jobId: string, fence: string): EngineTarget | undefined {
    const record = this.jobs.get(jobId)?.record;
    const launch = record?.launch;
    if (record === undefined || launch?.engine_api_key === undefined || record.phase !== 'ready' || record.fence !== fence)
      return undefined;
    const containerPort = engineContainerPort(launch);
    if (containerPort === undefined) return undefined;
    const port =
      this.context.settings.networkMode === 'host'
        ? containerPort
        : [...(record.ports ?? []), ...(record.probe_ports ?? [])].find((p) => p.container_port === containerPort)?.host_port;
    return port === undefined ? undefined : { host: this.context.settings.probeHost, port, apiKey: launch.engine_api_key };
  }

  /** A logs_open or logs_cancel from the control plane: the job's kept output, then its new lines (job-logs.ts). */
  handleLogs(msg: LogsOpenMessage | LogsCancelMessage, send: LogsSend): void {
    this.context.logs.handle(msg, send);
  }

  /** The channel's connection ended: the log streams on it can no longer be answered. */
  abortLogStreams(): void {
    this.context.logs.abortStreams();
  }

  /** A copy of one job's record (for the CLI and tests); undefined when unknown. */
  job(jobId: string): JobRecord | undefined {
    const job = this.jobs.get(jobId);
    return job === undefined ? undefined : (JSON.parse(JSON.stringify(job.record)) as JobRecord);
  }

  /**
   * Resolves once the work in flight has finished: launches, queued stops, cleans and meter ticks, and
   * hand-overs to the channel, including work they started. For tests on a manual clock: work that waits
   * on the clock (a readiness retry, a backoff) is finished only by advancing it.
   */
  async settled(): Promise<void> {
    const inFlight = () => [...this.jobs.values()].flatMap((job) => [job.chain, job.flushing, ...(job.launch ? [job.launch.done] : [])]);
    for (let round = 0; round < SETTLE_ROUNDS_MAX; round += 1) {
      const before = inFlight();
      await Promise.allSettled(before);
      const after = inFlight();
      if (after.length === before.length && after.every((promise, index) => promise === before[index])) return;
    }
    throw new Error(`JobSupervisor.settled: work still starting more work after ${SETTLE_ROUNDS_MAX} rounds`);
  }

  /**
   * Stops timers and SSH listeners and abandons in-flight launches, leaving containers as they are:
   * a new supervisor over the same state directory takes over from the records.
   */
  async close(): Promise<void> {
    const { clock, lifecycle } = this.context;
    if (lifecycle.closing) return;
    lifecycle.closing = true;
    const pending: Promise<unknown>[] = [];
    for (const job of this.jobs.values()) {
      clock.clearTimeout(job.meterTimer);
      clock.clearTimeout(job.retrievalTimer);
      clock.clearTimeout(job.cleanTimer);
      clock.clearTimeout(job.flushRetryTimer);
      job.launch?.controller.abort();
      if (job.launch !== undefined) pending.push(job.launch.done);
      pending.push(job.chain, job.flushing);
    }
    // Log captures stop here; the next run re-attaches from the kept log.
    this.context.logs.close();
    const closeWait = new AbortController();
    await Promise.race([Promise.allSettled(pending), clock.sleep(CLOSE_WAIT_MS, closeWait.signal)]);
    closeWait.abort();
    for (const job of this.jobs.values()) await this.access.close(job);
  }

  /**
   * Applies the fence of a command. A lower fence is stale and ignored; a higher one rebinds the job:
   * the fence is adopted, the meter sequence restarts at 1 for it, and the job's status is announced
   * again under it. Returns whether the command should be applied.
   */
  private async rebind(job: LiveJob, fence: string, kind: string, announce = true): Promise<boolean> {
    const record = job.record;
    const order = fenceOrder(fence, record.fence);
    if (order < 0) {
      this.context.logger.warn({ job_id: record.job_id, fence, current: record.fence, kind }, 'stale fence ignored');
      return false;
    }
    if (order > 0) {
      record.fence = fence;
      if (record.meter !== undefined) record.meter = { ...record.meter, seq: 0 };
    }
    if (order > 0 || announce) {
      const status = statusOfPhase(record.phase);
      const extra: Partial<JobStatusBody> =
        record.phase === 'ready'
          ? { evidence: record.evidence ?? {}, access: jobAccess(record) }
          : record.failure !== undefined
            ? { detail: record.failure }
            : {};
      const outbox = this.context.outbox;
      await outbox.commit(job, announce && status !== undefined ? [outbox.status(record, status, extra)] : []);
    }
    return true;
  }

  private assertOpen(): void {
    if (this.context.lifecycle.closing) throw new Error('JobSupervisor is closed');
    if (!this.started) throw new Error('JobSupervisor.start() has not run');
  }
}
