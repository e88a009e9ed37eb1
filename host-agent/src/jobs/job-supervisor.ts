// The host side of a rental: launch_job, stop_job and clean_job commands become a container on the
// local Docker engine, an SSH listener, job_status messages and meter receipts. Every state change is
// written to `<stateDir>/jobs/<job_id>.json` before its message is handed to the channel, so a
// restarted agent picks each job up where it was: SSH keeps answering, metering resumes with the
// next meter_seq, and no period is reported twice.
import { spawn } from 'node:child_process';
import { constants } from 'node:fs';
import { access, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { CleanJobBody, CommandMessage, LaunchJobBody, StopJobBody } from '@ark/shared';
// The SSH side (ssh2) is loaded on first use, so an idle agent with no jobs never holds it in memory.
import type { AccessMode, JobSshServer } from '../access/job-ssh-server.js';
import type { GpuInventorySource } from '../collectors/types.js';
import type { ContainerRuntime, ContainerState, NetworkMode } from '../runtime/container-runtime.js';
import { gpuDeviceIds } from '../runtime/gpu-devices.js';
import { formatDigestReference, parseDigestReference } from '../runtime/image-reference.js';
import { PortAllocator, type PortRange } from '../runtime/port-allocator.js';
import {
  ACTIVE_PHASES,
  type JobAccess,
  type JobChannelPort,
  type JobEvidence,
  type JobMessageBody,
  type JobPhase,
  type JobRecord,
  JOB_RECORD_VERSION,
  type JobStatus,
  type JobStatusBody,
  type PublishedPort,
} from './job-record.js';
import { isJobId, JobStore } from './job-store.js';
import { nextMeterDelayMs, nextReceipt } from './meter.js';
import { checkReadiness, NotReadyError, type ReadinessPlan } from './readiness.js';
import { boundedText, errorText, redact } from './text.js';

export type JobCommand =
  | { kind: 'launch_job'; body: LaunchJobBody }
  | { kind: 'stop_job'; body: StopJobBody }
  | { kind: 'clean_job'; body: CleanJobBody };

/** One entry of HeartbeatMessage.running_jobs. */
export type RunningJob = { job_id: string; fence: string; container_state: string };

/** Pino-compatible subset, so the composition root can pass its logger straight in. */
export type JobSupervisorLogger = {
  info(detail: Record<string, unknown>, message: string): void;
  warn(detail: Record<string, unknown>, message: string): void;
  error(detail: Record<string, unknown>, message: string): void;
};

export type JobSupervisorOptions = {
  /** The agent's state directory; jobs live under `<stateDir>/jobs/`. */
  stateDir: string;
  runtime: ContainerRuntime;
  channel: JobChannelPort;
  /** Maps assigned PCI addresses to Docker device IDs; without it a launch naming GPUs fails. */
  gpuInventory?: GpuInventorySource;
  /** Host ports for SSH listeners and (with bridge networking) published template ports. */
  portRange: PortRange;
  /** `bridge` in production; `host` where no bridge exists (tests), making container ports host ports. */
  networkMode: Exclude<NetworkMode, 'none'>;
  /** SSH listeners bind here: 0.0.0.0 in production (the default), 127.0.0.1 in tests. */
  sshBindHost?: string;
  /** Template ports are published here with bridge networking (default 0.0.0.0). */
  publishHost?: string;
  /** Where the agent reaches published ports for readiness probes (default 127.0.0.1). */
  probeHost?: string;
  /** docker stop grace before SIGKILL (default 10 s). */
  stopGraceS?: number;
  /** Bound on verified readiness after the container starts (default 10 min: engines load models slowly). */
  readinessTimeoutMs?: number;
  readinessIntervalMs?: number;
  probeTimeoutMs?: number;
  /** At most one pulling status per this interval (default 1 s); percent must also have grown. */
  pullProgressIntervalMs?: number;
  /** How often a running container is checked for exit between receipts (default 5 s). */
  exitWatchIntervalMs?: number;
  /**
   * Where read-only SFTP reads a stopped job's files from: the volume's mountpoint, or a copy taken
   * out of the stopped container with Docker's archive API. `auto` (default) prefers the mountpoint.
   */
  retrievalSource?: 'auto' | 'mountpoint' | 'archive';
  /** Bound on an archive copy for retrieval (default 20 GiB). */
  retrievalCopyMaxBytes?: number;
  /** A channel that refused a message is offered the job's outbox again after this long (default 5 s). */
  channelRetryMs?: number;
  /** Records of cleaned jobs are kept this long to answer repeated commands (default 7 days). */
  cleanedRetentionMs?: number;
  now?: () => Date;
  logger?: JobSupervisorLogger;
};

export const JOB_LABEL = 'ark.job_id';
const VOLUME_MOUNT_PATH = '/workspace';
const FAILURE_LOG_LINES = 20;
const FAILURE_LOG_BYTES = 1200;
const CLOSE_WAIT_MS = 30_000;
const CLEAN_RETRY_MAX = 5;
/** setTimeout holds at most 2^31-1 ms; longer waits are re-armed. */
const TIMER_MAX_MS = 2_000_000_000;
const RUNNING_JOBS_MAX = 64;
/** A channel that refused a message is offered it again after this long. */
const CHANNEL_RETRY_MS_DEFAULT = 5_000;

type LiveJob = {
  record: JobRecord;
  /** Serialises stop, clean and meter ticks of one job. */
  chain: Promise<void>;
  launch?: { controller: AbortController; done: Promise<void> };
  meterTimer?: NodeJS.Timeout;
  retrievalTimer?: NodeJS.Timeout;
  cleanTimer?: NodeJS.Timeout;
  cleanAttempts: number;
  /** Serialises hand-overs of the outbox to the channel. */
  flushing: Promise<void>;
  flushRetryTimer?: NodeJS.Timeout;
  ssh?: JobSshServer;
  containerState?: string;
};

const hostKeys = () => import('../access/host-key.js');

const silentLogger: JobSupervisorLogger = { info: () => undefined, warn: () => undefined, error: () => undefined };

class LaunchFailure extends Error {
  constructor(
    message: string,
    readonly exitCode?: number,
  ) {
    super(message);
    this.name = 'LaunchFailure';
  }
}

function fenceOrder(a: string, b: string): number {
  const left = BigInt(a);
  const right = BigInt(b);
  return left < right ? -1 : left > right ? 1 : 0;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/** The wire status that announces a phase again (stopping and cleaning have none of their own). */
function statusOfPhase(phase: JobPhase): JobStatus | undefined {
  switch (phase) {
    case 'stopping':
    case 'cleaning':
      return undefined;
    default:
      return phase;
  }
}

export class JobSupervisor {
  private readonly options: JobSupervisorOptions;
  private readonly runtime: ContainerRuntime;
  private readonly channel: JobChannelPort;
  private readonly store: JobStore;
  private readonly ports: PortAllocator;
  private readonly logger: JobSupervisorLogger;
  private readonly now: () => Date;
  private readonly jobs = new Map<string, LiveJob>();
  private closing = false;
  private started = false;
  private orphanSweepDeferred = false;

  constructor(options: JobSupervisorOptions) {
    this.options = options;
    this.runtime = options.runtime;
    this.channel = options.channel;
    this.logger = options.logger ?? silentLogger;
    this.store = new JobStore(options.stateDir, this.logger);
    this.now = options.now ?? (() => new Date());
    const sshBindHost = options.sshBindHost ?? '0.0.0.0';
    const probeHosts = options.networkMode === 'bridge' ? [sshBindHost, options.publishHost ?? '0.0.0.0'] : [sshBindHost];
    this.ports = new PortAllocator({ range: options.portRange, probeHosts: [...new Set(probeHosts)] });
  }

  /** Loads persisted jobs and reconciles each with Docker: SSH re-opened, metering resumed, interrupted work redone. */
  async start(): Promise<void> {
    if (this.started) throw new Error('JobSupervisor already started');
    this.started = true;
    const records = await this.store.loadAll();
    const retentionMs = this.options.cleanedRetentionMs ?? 7 * 24 * 3_600_000;
    for (const record of records) {
      if (record.phase === 'cleaned' && this.now().getTime() - new Date(record.updated_at).getTime() > retentionMs) {
        await this.store.remove(record.job_id);
        continue;
      }
      this.jobs.set(record.job_id, { record, chain: Promise.resolve(), cleanAttempts: 0, flushing: Promise.resolve() });
    }
    // With nothing live to reconcile, the orphan sweep waits for the first job command: an idle agent then
    // makes no Docker call and never loads the Docker client. Orphans are only reported, so nothing is lost.
    if ([...this.jobs.values()].every((job) => job.record.phase === 'cleaned')) this.orphanSweepDeferred = true;
    else await this.reportOrphans();
    for (const job of this.jobs.values()) {
      await this.flush(job);
      await this.resume(job).catch((error: unknown) =>
        this.logger.error({ job_id: job.record.job_id, error: errorText(error) }, 'could not resume job'),
      );
    }
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
    this.sweepDeferredOrphans();
    if (!isJobId(body.job_id)) throw new Error('launch_job: job_id is not a UUID');
    const existing = this.jobs.get(body.job_id);
    if (existing !== undefined) {
      await this.rebind(existing, body.fence, 'launch_job');
      return;
    }
    const now = this.now().toISOString();
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
    const job: LiveJob = { record, chain: Promise.resolve(), cleanAttempts: 0, flushing: Promise.resolve() };
    this.jobs.set(body.job_id, job);
    await this.commit(job, [this.status(job, 'accepted')]);
    this.startLaunch(job);
  }

  async stopJob(body: StopJobBody): Promise<void> {
    this.assertOpen();
    this.sweepDeferredOrphans();
    const job = this.jobs.get(body.job_id);
    if (job === undefined) {
      // Nothing of this job is here (never launched, or long cleaned): say so, and the control plane moves on.
      await this.channel.enqueue(this.bareStatus(body.job_id, body.fence, 'stopped', 'the job is not on this machine'));
      return;
    }
    if (!(await this.rebind(job, body.fence, 'stop_job', false))) return;
    const record = job.record;
    if (record.stop === undefined && record.phase !== 'cleaning' && record.phase !== 'cleaned') {
      record.stop = {
        reason: boundedText(body.reason, 500),
        retrieval_window_s: body.retrieval_window_s,
        requested_at: this.now().toISOString(),
      };
      await this.commit(job);
    }
    job.launch?.controller.abort();
    void this.serial(job, () => this.runStop(job));
  }

  async cleanJob(body: CleanJobBody): Promise<void> {
    this.assertOpen();
    this.sweepDeferredOrphans();
    if (!isJobId(body.job_id)) throw new Error('clean_job: job_id is not a UUID');
    const job = this.jobs.get(body.job_id);
    if (job === undefined) {
      const name = `ark-job-${body.job_id}`;
      await this.runtime.removeContainer(name).catch(() => undefined);
      await this.runtime.removeVolume(name).catch(() => undefined);
      await this.channel.enqueue(this.bareStatus(body.job_id, body.fence, 'cleaned'));
      return;
    }
    if (!(await this.rebind(job, body.fence, 'clean_job', false))) return;
    if (job.record.phase !== 'cleaned' && job.record.phase !== 'cleaning') {
      job.record.stop ??= { reason: 'cleaned', retrieval_window_s: 0, requested_at: this.now().toISOString() };
      job.record.clean_requested_at ??= this.now().toISOString();
      await this.commit(job);
    }
    job.launch?.controller.abort();
    void this.serial(job, () => this.runClean(job));
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

  /** A copy of one job's record (for the CLI and tests); undefined when unknown. */
  job(jobId: string): JobRecord | undefined {
    const job = this.jobs.get(jobId);
    return job === undefined ? undefined : (JSON.parse(JSON.stringify(job.record)) as JobRecord);
  }

  /**
   * Stops timers and SSH listeners and abandons in-flight launches, leaving containers as they are:
   * a new supervisor over the same state directory takes over from the records.
   */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    const pending: Promise<unknown>[] = [];
    for (const job of this.jobs.values()) {
      clearTimeout(job.meterTimer);
      clearTimeout(job.retrievalTimer);
      clearTimeout(job.cleanTimer);
      clearTimeout(job.flushRetryTimer);
      job.launch?.controller.abort();
      if (job.launch !== undefined) pending.push(job.launch.done);
      pending.push(job.chain, job.flushing);
    }
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled(pending),
      new Promise((resolve) => {
        timer = setTimeout(resolve, CLOSE_WAIT_MS);
      }),
    ]);
    clearTimeout(timer);
    for (const job of this.jobs.values()) {
      await job.ssh?.close().catch(() => undefined);
      job.ssh = undefined;
    }
  }

  // ---- launch ----

  private startLaunch(job: LiveJob): void {
    const controller = new AbortController();
    const done = this.runLaunch(job, controller.signal).catch((error: unknown) =>
      this.logger.error({ job_id: job.record.job_id, error: errorText(error) }, 'launch crashed'),
    );
    job.launch = { controller, done };
    void done.finally(() => {
      if (job.launch?.done === done) job.launch = undefined;
    });
  }

  private async runLaunch(job: LiveJob, signal: AbortSignal): Promise<void> {
    const record = job.record;
    const launch = record.launch;
    if (launch === undefined) return;
    try {
      const reference = parseDigestReference(launch.image_digest);
      if (reference === undefined) throw new LaunchFailure(`image ${launch.image_digest.slice(0, 200)} is not named by a sha256 digest`);
      const image = formatDigestReference(reference);
      if (record.phase === 'accepted' || record.phase === 'pulling') {
        await this.pull(job, image, signal);
        record.phase = 'starting';
        await this.commit(job, [this.status(job, 'starting')]);
      }
      if (signal.aborted) return;
      const deviceIds = await this.deviceIds(launch.gpu_pci_addresses);
      await this.assignPorts(job);
      const hostKey = await (await hostKeys()).loadOrCreateHostKey(this.store.hostKeyPath(record.job_id));
      record.ssh_host_key_fingerprint = hostKey.fingerprint;
      if (signal.aborted) return;
      const labels = { [JOB_LABEL]: record.job_id, 'ark.fence': record.fence, 'ark.managed-by': 'ark-agent' };
      await this.runtime.ensureVolume(record.volume_name, labels);
      let state = await this.runtime.inspectContainer(record.container_name);
      if (state === undefined) {
        const env = { ...launch.env };
        // Model engines read their per-job key from here unless the template already wires it.
        if (launch.engine_api_key !== undefined) env.ARK_ENGINE_API_KEY ??= launch.engine_api_key;
        const bindings = [...(record.ports ?? []), ...(record.probe_ports ?? [])].map((port) => ({
          containerPort: port.container_port,
          hostPort: port.host_port,
          hostIp: (record.probe_ports ?? []).includes(port)
            ? (this.options.probeHost ?? '127.0.0.1')
            : (this.options.publishHost ?? '0.0.0.0'),
        }));
        record.container_id = await this.runtime.createContainer({
          name: record.container_name,
          image,
          labels,
          env,
          ...(launch.command !== undefined ? { command: launch.command } : {}),
          volumeName: record.volume_name,
          volumeMountPath: VOLUME_MOUNT_PATH,
          networkMode: this.options.networkMode,
          portBindings: bindings,
          gpuDeviceIds: deviceIds,
        });
        await this.commit(job);
        state = await this.runtime.inspectContainer(record.container_id);
      }
      if (state === undefined) throw new LaunchFailure('the container vanished right after it was created');
      record.container_id = state.id;
      if (signal.aborted) return;
      if (state.status === 'created') await this.runtime.startContainer(state.id);
      else if (!state.running) throw await this.exitedEarly(job, state);
      job.containerState = 'running';
      await this.ensureSsh(job, this.executionMode(job));
      const startedAtMs = Date.now();
      const evidence = await this.waitReady(job, signal);
      if (signal.aborted) return;
      evidence.readiness_ms = Date.now() - startedAtMs;
      const now = this.now().toISOString();
      record.phase = 'ready';
      record.ready_at = now;
      record.evidence = evidence;
      record.meter = { seq: 0, period_end: now, final_sent: false };
      // The ready status carries the meter start itself as its time.
      await this.commit(job, [this.status(job, 'ready', { at: now, evidence, access: this.access(job) })]);
      this.logger.info({ job_id: record.job_id, evidence }, 'job ready');
      this.scheduleMeter(job);
    } catch (error) {
      // A stop, clean or close took over; they decide what happens next.
      if (signal.aborted) return;
      await this.fail(job, error);
    }
  }

  private async pull(job: LiveJob, image: string, signal: AbortSignal): Promise<void> {
    const record = job.record;
    if (record.phase === 'accepted') {
      record.phase = 'pulling';
      await this.commit(job, [this.status(job, 'pulling', { progress_pct: 0 })]);
    }
    const intervalMs = this.options.pullProgressIntervalMs ?? 1000;
    let reported = 0;
    let reportedAt = Date.now();
    let progress = Promise.resolve();
    await this.runtime.pullImage(image, {
      signal,
      onProgress: (percent) => {
        // At most one per interval, only when it grew, and 100 only once the image is verified.
        if (percent <= reported || percent >= 100 || Date.now() - reportedAt < intervalMs) return;
        reported = percent;
        reportedAt = Date.now();
        progress = progress.then(() => this.commit(job, [this.status(job, 'pulling', { progress_pct: percent })])).catch(() => undefined);
      },
    });
    await progress;
    if (signal.aborted) return;
    await this.commit(job, [this.status(job, 'pulling', { progress_pct: 100 })]);
  }

  private async deviceIds(pciAddresses: readonly string[]): Promise<string[]> {
    if (pciAddresses.length === 0) return [];
    if (this.options.gpuInventory === undefined) throw new LaunchFailure('GPUs were assigned but this agent has no GPU inventory');
    try {
      return gpuDeviceIds(pciAddresses, await this.options.gpuInventory.inventory());
    } catch (error) {
      throw new LaunchFailure(errorText(error));
    }
  }

  /** Chooses the SSH port (and with bridge networking the published ports) once, and persists them. */
  private async assignPorts(job: LiveJob): Promise<void> {
    const record = job.record;
    const launch = record.launch;
    if (record.ssh_port !== undefined || launch === undefined) return;
    const bridge = this.options.networkMode === 'bridge';
    const healthPort = launch.health_check?.port;
    const needsProbePort = bridge && healthPort !== undefined && !launch.ports.some((port) => port.container_port === healthPort);
    const taken = new Set<number>();
    for (const other of this.jobs.values()) {
      if (other === job || other.record.phase === 'cleaned') continue;
      for (const port of [
        other.record.ssh_port,
        ...(other.record.ports ?? []).map((p) => p.host_port),
        ...(other.record.probe_ports ?? []).map((p) => p.host_port),
      ]) {
        if (port !== undefined) taken.add(port);
      }
    }
    const count = 1 + (bridge ? launch.ports.length + (needsProbePort ? 1 : 0) : 0);
    let chosen: number[];
    try {
      chosen = await this.ports.allocate(count, taken);
    } catch (error) {
      throw new LaunchFailure(errorText(error));
    }
    record.ssh_port = chosen[0];
    record.ports = launch.ports.map((port, index) => ({
      container_port: port.container_port,
      host_port: bridge ? (chosen[1 + index] as number) : port.container_port,
      protocol: port.protocol,
    }));
    record.probe_ports =
      needsProbePort && healthPort !== undefined
        ? [{ container_port: healthPort, host_port: chosen[count - 1] as number, protocol: 'tcp' }]
        : [];
    await this.commit(job);
  }

  private hostPortOf(job: LiveJob, containerPort: number): number | undefined {
    if (this.options.networkMode === 'host') return containerPort;
    const all: PublishedPort[] = [...(job.record.ports ?? []), ...(job.record.probe_ports ?? [])];
    return all.find((port) => port.container_port === containerPort)?.host_port;
  }

  private readinessPlan(job: LiveJob): ReadinessPlan {
    const launch = job.record.launch as LaunchJobBody;
    const plan: ReadinessPlan = { host: this.options.probeHost ?? '127.0.0.1' };
    if (launch.health_check !== undefined) {
      const port = this.hostPortOf(job, launch.health_check.port);
      if (port === undefined) throw new LaunchFailure(`health port ${launch.health_check.port} is not published`);
      plan.health = { port, ...(launch.health_check.path !== undefined ? { path: launch.health_check.path } : {}) };
    }
    if (launch.engine_api_key !== undefined) {
      const enginePort = launch.health_check?.port ?? launch.ports.find((port) => port.protocol !== 'tcp')?.container_port;
      const port = enginePort === undefined ? undefined : this.hostPortOf(job, enginePort);
      if (port === undefined) throw new LaunchFailure('model template without a port to ask for its model list');
      plan.models = { port, apiKey: launch.engine_api_key };
    }
    return plan;
  }

  private async waitReady(job: LiveJob, signal: AbortSignal): Promise<JobEvidence> {
    const plan = this.readinessPlan(job);
    const timeoutMs = this.options.readinessTimeoutMs ?? 10 * 60_000;
    const intervalMs = this.options.readinessIntervalMs ?? 500;
    const probeTimeoutMs = this.options.probeTimeoutMs ?? 3_000;
    const deadline = Date.now() + timeoutMs;
    const containerId = job.record.container_id as string;
    let attempts = 0;
    let lastProblem = 'no check ran';
    for (;;) {
      if (signal.aborted) throw new LaunchFailure('readiness abandoned');
      attempts += 1;
      const state = await this.runtime.inspectContainer(containerId);
      if (state === undefined) throw new LaunchFailure('the container vanished before it was ready');
      if (!state.running) throw await this.exitedEarly(job, state);
      try {
        const checks = await checkReadiness(plan, probeTimeoutMs);
        // The checks passed; the container must still be the one answering.
        const after = await this.runtime.inspectContainer(containerId);
        if (after?.running === true) return { container_running: true, ...checks, readiness_attempts: attempts };
      } catch (error) {
        if (!(error instanceof NotReadyError)) throw error;
        lastProblem = error.message;
      }
      if (Date.now() >= deadline) throw new LaunchFailure(`not ready within ${Math.round(timeoutMs / 1000)} s: ${lastProblem}`);
      await sleep(intervalMs, signal);
    }
  }

  private async exitedEarly(job: LiveJob, state: ContainerState): Promise<LaunchFailure> {
    const logs = await this.runtime.containerLogs(state.id, { tailLines: FAILURE_LOG_LINES, maxBytes: FAILURE_LOG_BYTES }).catch(() => '');
    const tail = logs.trim() === '' ? '' : `; last output:\n${logs.trim()}`;
    job.containerState = state.status;
    return new LaunchFailure(`the container exited with code ${state.exitCode ?? 'unknown'} before it was ready${tail}`, state.exitCode);
  }

  private async fail(job: LiveJob, error: unknown): Promise<void> {
    const record = job.record;
    const detail = this.detail(job, error instanceof LaunchFailure || error instanceof Error ? error.message : String(error));
    this.logger.warn({ job_id: record.job_id, detail }, 'job failed');
    clearTimeout(job.meterTimer);
    // Nothing may keep running unpaid: the container is stopped, kept for diagnosis until clean_job.
    if (record.container_id !== undefined) {
      await this.runtime.stopContainer(record.container_id, this.options.stopGraceS ?? 10).catch(() => undefined);
    }
    await this.closeSsh(job);
    record.phase = 'failed';
    record.failure = detail;
    const exitCode = error instanceof LaunchFailure ? error.exitCode : undefined;
    if (exitCode !== undefined) record.exit_code = exitCode;
    await this.commit(job, [this.status(job, 'failed', { detail, ...(exitCode !== undefined ? { exit_code: exitCode } : {}) })]);
  }

  // ---- metering ----

  private scheduleMeter(job: LiveJob): void {
    clearTimeout(job.meterTimer);
    const record = job.record;
    if (this.closing || record.phase !== 'ready' || record.meter === undefined || record.meter.final_sent || record.launch === undefined)
      return;
    const dueMs = nextMeterDelayMs(record.meter, record.launch.meter_interval_s, this.now());
    const delayMs = Math.min(dueMs, this.options.exitWatchIntervalMs ?? 5_000);
    job.meterTimer = setTimeout(() => void this.serial(job, () => this.meterTick(job)), delayMs);
  }

  /** Checks the container; sends the periodic receipt when due, or the final one if the container is gone. */
  private async meterTick(job: LiveJob): Promise<void> {
    const record = job.record;
    if (this.closing || record.phase !== 'ready' || record.meter === undefined || record.launch === undefined) return;
    let state: ContainerState | undefined;
    try {
      state = await this.runtime.inspectContainer(record.container_id ?? record.container_name);
    } catch (error) {
      // Docker did not answer: no receipt now; the next one covers this time too.
      this.logger.warn({ job_id: record.job_id, error: errorText(error) }, 'container inspect failed');
      this.scheduleMeter(job);
      return;
    }
    job.containerState = state?.status ?? 'missing';
    if (state?.running === true) {
      if (job.ssh === undefined && record.ssh_port !== undefined) {
        // Access could not be restored after a restart (the port was busy): try again on every tick.
        await this.ensureSsh(job, this.executionMode(job)).catch((error: unknown) =>
          this.logger.warn({ job_id: record.job_id, error: errorText(error) }, 'job access still unavailable'),
        );
      }
      if (nextMeterDelayMs(record.meter, record.launch.meter_interval_s, this.now()) === 0) {
        const next = nextReceipt({
          jobId: record.job_id,
          fence: record.fence,
          meter: record.meter,
          now: this.now(),
          run: state,
          final: false,
        });
        if (next !== undefined) {
          record.meter = next.meter;
          await this.commit(job, [next.receipt]);
        }
      }
      this.scheduleMeter(job);
      return;
    }
    // The container stopped on its own (or vanished): the meter ends with what really ran.
    const final = nextReceipt({ jobId: record.job_id, fence: record.fence, meter: record.meter, now: this.now(), run: state, final: true });
    const messages: JobMessageBody[] = [];
    if (final !== undefined) {
      record.meter = final.meter;
      messages.push(final.receipt);
    }
    job.ssh?.setMode({ kind: 'closed' });
    if (state === undefined) {
      record.phase = 'failed';
      record.failure = 'the container disappeared while the job ran';
      messages.push(this.status(job, 'failed', { detail: record.failure }));
    } else {
      record.phase = 'exited';
      if (state.exitCode !== undefined) record.exit_code = state.exitCode;
      const logs = await this.runtime
        .containerLogs(state.id, { tailLines: FAILURE_LOG_LINES, maxBytes: FAILURE_LOG_BYTES })
        .catch(() => '');
      messages.push(
        this.status(job, 'exited', {
          ...(state.exitCode !== undefined ? { exit_code: state.exitCode } : {}),
          ...(logs.trim() !== '' ? { detail: this.detail(job, `last output:\n${logs.trim()}`) } : {}),
        }),
      );
    }
    await this.commit(job, messages);
  }

  // ---- stop, retrieval, clean ----

  private async runStop(job: LiveJob): Promise<void> {
    await job.launch?.done;
    const record = job.record;
    const stop = record.stop;
    if (stop === undefined || this.closing) return;
    if (record.phase === 'stopped' || record.phase === 'cleaned' || record.phase === 'failed') {
      // A repeated stop is answered with where the job already is.
      const status = statusOfPhase(record.phase);
      if (status !== undefined)
        await this.commit(job, [this.status(job, status, record.failure !== undefined ? { detail: record.failure } : {})]);
      return;
    }
    if (record.phase === 'cleaning') return;
    if (record.phase !== 'stopping') {
      record.phase = 'stopping';
      await this.commit(job);
    }
    clearTimeout(job.meterTimer);
    job.ssh?.setMode({ kind: 'closed' });
    let state: ContainerState | undefined;
    if (record.container_id !== undefined) {
      try {
        await this.runtime.stopContainer(record.container_id, this.options.stopGraceS ?? 10);
      } catch (error) {
        this.logger.warn({ job_id: record.job_id, error: errorText(error) }, 'docker stop failed');
      }
      state = await this.runtime.inspectContainer(record.container_id).catch(() => undefined);
      job.containerState = state?.status ?? 'missing';
    }
    if (record.meter !== undefined && !record.meter.final_sent) {
      const final = nextReceipt({
        jobId: record.job_id,
        fence: record.fence,
        meter: record.meter,
        now: this.now(),
        run: state,
        final: true,
      });
      if (final !== undefined) {
        record.meter = final.meter;
        await this.commit(job, [final.receipt]);
      }
    }
    // The files are served before STOPPED is announced, so the renter can fetch them at once.
    const root = stop.retrieval_window_s > 0 ? await this.prepareRetrieval(job) : undefined;
    const now = this.now();
    record.phase = 'stopped';
    record.stopped_at = now.toISOString();
    record.retrieval_until = new Date(now.getTime() + stop.retrieval_window_s * 1000).toISOString();
    if (state?.exitCode !== undefined && record.exit_code === undefined) record.exit_code = state.exitCode;
    try {
      await this.serveRetrieval(job, root);
    } catch (error) {
      // The SSH port taken (by another process since a restart): the stop still completes, without retrieval.
      this.logger.warn({ job_id: record.job_id, error: errorText(error) }, 'job files cannot be served for retrieval');
      await this.closeSsh(job);
    }
    await this.commit(job, [this.status(job, 'stopped', { ...(record.exit_code !== undefined ? { exit_code: record.exit_code } : {}) })]);
  }

  private async prepareRetrieval(job: LiveJob): Promise<string | undefined> {
    try {
      return await this.retrievalRoot(job);
    } catch (error) {
      this.logger.warn({ job_id: job.record.job_id, error: errorText(error) }, 'job files cannot be served for retrieval');
      return undefined;
    }
  }

  /** Serves read-only SFTP over the job's files (at `root`) until the retrieval window ends. */
  private async serveRetrieval(job: LiveJob, root: string | undefined): Promise<void> {
    const record = job.record;
    const until = record.retrieval_until === undefined ? 0 : new Date(record.retrieval_until).getTime();
    const remainingMs = until - this.now().getTime();
    if (root === undefined || remainingMs <= 0 || record.ssh_port === undefined || record.launch === undefined) {
      await this.closeSsh(job);
      return;
    }
    await this.ensureSsh(job, { kind: 'retrieval', root });
    clearTimeout(job.retrievalTimer);
    job.retrievalTimer = setTimeout(
      () =>
        void this.serial(job, async () => {
          if (job.record.phase !== 'stopped') return;
          if (new Date(job.record.retrieval_until ?? 0).getTime() > this.now().getTime()) await this.serveRetrieval(job, root);
          else await this.closeSsh(job);
        }),
      Math.min(remainingMs, TIMER_MAX_MS),
    );
  }

  private async retrievalRoot(job: LiveJob): Promise<string | undefined> {
    const source = this.options.retrievalSource ?? 'auto';
    const record = job.record;
    if (source !== 'archive') {
      const mountpoint = await this.runtime.volumeMountpoint(record.volume_name);
      if (
        mountpoint !== undefined &&
        (await access(mountpoint, constants.R_OK | constants.X_OK).then(
          () => true,
          () => false,
        ))
      ) {
        return mountpoint;
      }
      if (source === 'mountpoint') return undefined;
    }
    if (record.container_id === undefined) return undefined;
    return this.copyOut(job, record.container_id);
  }

  private retrievalDirectory(jobId: string): string {
    return join(this.options.stateDir, 'retrieval', jobId);
  }

  /** Copies /workspace out of the stopped container (Docker's archive API) when the volume's directory cannot be read. */
  private async copyOut(job: LiveJob, containerId: string): Promise<string> {
    const directory = this.retrievalDirectory(job.record.job_id);
    const complete = join(directory, '.complete');
    const root = join(directory, 'workspace');
    if (
      await access(complete).then(
        () => true,
        () => false,
      )
    )
      return root;
    await rm(directory, { recursive: true, force: true });
    await mkdir(directory, { recursive: true, mode: 0o700 });
    const archive = await this.runtime.exportPath(containerId, VOLUME_MOUNT_PATH);
    await extractTar(archive, directory, this.options.retrievalCopyMaxBytes ?? 20 * 1024 ** 3);
    await writeFile(complete, '');
    return root;
  }

  private async runClean(job: LiveJob): Promise<void> {
    await job.launch?.done;
    const record = job.record;
    if (this.closing) return;
    if (record.phase === 'cleaned') {
      await this.commit(job, [this.status(job, 'cleaned')]);
      return;
    }
    // A running job is stopped first, so its final receipt is sent before anything is removed.
    if (record.phase !== 'stopped' && record.phase !== 'failed' && record.phase !== 'cleaning' && record.phase !== 'exited') {
      await this.runStop(job);
    }
    if (record.phase !== 'cleaning') {
      record.phase = 'cleaning';
      await this.commit(job);
    }
    clearTimeout(job.meterTimer);
    clearTimeout(job.retrievalTimer);
    await this.closeSsh(job);
    try {
      await this.runtime.removeContainer(record.container_id ?? record.container_name);
      await this.runtime.removeVolume(record.volume_name);
    } catch (error) {
      job.cleanAttempts += 1;
      this.logger.warn({ job_id: record.job_id, attempt: job.cleanAttempts, error: errorText(error) }, 'clean failed');
      if (job.cleanAttempts < CLEAN_RETRY_MAX && !this.closing) {
        clearTimeout(job.cleanTimer);
        job.cleanTimer = setTimeout(() => void this.serial(job, () => this.runClean(job)), 1000 * 2 ** job.cleanAttempts);
      }
      return;
    }
    await (await hostKeys()).removeHostKey(this.store.hostKeyPath(record.job_id));
    await rm(this.retrievalDirectory(record.job_id), { recursive: true, force: true });
    record.phase = 'cleaned';
    // The launch command holds the job's environment and engine key; nothing needs them any more.
    record.launch = undefined;
    await this.commit(job, [this.status(job, 'cleaned')]);
  }

  // ---- restart ----

  private async resume(job: LiveJob): Promise<void> {
    const record = job.record;
    if (record.clean_requested_at !== undefined && record.phase !== 'cleaned') {
      void this.serial(job, () => this.runClean(job));
      return;
    }
    if (record.stop !== undefined && !['stopped', 'cleaning', 'cleaned', 'failed'].includes(record.phase)) {
      void this.serial(job, () => this.runStop(job));
      return;
    }
    switch (record.phase) {
      case 'accepted':
      case 'pulling':
      case 'starting':
        this.startLaunch(job);
        return;
      case 'ready': {
        try {
          const state = await this.runtime.inspectContainer(record.container_id ?? record.container_name);
          job.containerState = state?.status ?? 'missing';
          if (state?.running === true) await this.ensureSsh(job, this.executionMode(job));
        } catch (error) {
          // Docker not answering yet, or the SSH port taken: metering goes on regardless.
          this.logger.warn({ job_id: record.job_id, error: errorText(error) }, 'could not restore job access');
        }
        // The first tick comes at once when a receipt is overdue; a stopped container gets its final receipt.
        void this.serial(job, () => this.meterTick(job));
        return;
      }
      case 'stopped':
        if (new Date(record.retrieval_until ?? 0).getTime() > this.now().getTime())
          await this.serveRetrieval(job, await this.prepareRetrieval(job));
        return;
      default:
        return;
    }
  }

  /** Runs the orphan sweep that start() left for the first job command, in the background. */
  private sweepDeferredOrphans(): void {
    if (!this.orphanSweepDeferred) return;
    this.orphanSweepDeferred = false;
    void this.reportOrphans();
  }

  private async reportOrphans(): Promise<void> {
    try {
      for (const container of await this.runtime.listContainers(JOB_LABEL)) {
        const jobId = container.labels[JOB_LABEL] ?? '';
        if (!this.jobs.has(jobId)) {
          this.logger.warn(
            { job_id: jobId.slice(0, 64), container: container.id, status: container.status },
            'job container without a job record',
          );
        }
      }
    } catch (error) {
      this.logger.warn({ error: errorText(error) }, 'could not list job containers');
    }
  }

  // ---- SSH ----

  private executionMode(job: LiveJob): AccessMode {
    return {
      kind: 'execution',
      exec: (request) => {
        const id = job.record.container_id;
        if (id === undefined || job.record.phase !== 'ready') return Promise.reject(new Error('the job is not running'));
        return this.runtime.exec(id, request);
      },
    };
  }

  private async ensureSsh(job: LiveJob, mode: AccessMode): Promise<void> {
    if (job.ssh !== undefined) {
      job.ssh.setMode(mode);
      return;
    }
    const record = job.record;
    if (record.ssh_port === undefined || record.launch === undefined || this.closing) return;
    const hostKey = await (await hostKeys()).loadOrCreateHostKey(this.store.hostKeyPath(record.job_id));
    const { JobSshServer } = await import('../access/job-ssh-server.js');
    const server = new JobSshServer({
      jobId: record.job_id,
      hostKey,
      authorizedKeys: record.launch.ssh_public_keys,
      host: this.options.sshBindHost ?? '0.0.0.0',
      port: record.ssh_port,
      mode,
      logger: this.logger,
    });
    await server.listen();
    job.ssh = server;
  }

  private async closeSsh(job: LiveJob): Promise<void> {
    const server = job.ssh;
    job.ssh = undefined;
    await server?.close().catch(() => undefined);
  }

  // ---- messages and persistence ----

  private access(job: LiveJob): JobAccess {
    const record = job.record;
    return {
      ssh_port: record.ssh_port as number,
      ssh_host_key_fingerprint: record.ssh_host_key_fingerprint ?? '',
      ports: (record.ports ?? []).map((port) => ({ ...port })),
    };
  }

  private status(job: LiveJob, status: JobStatus, extra: Partial<JobStatusBody> = {}): JobStatusBody {
    return { t: 'job_status', job_id: job.record.job_id, fence: job.record.fence, status, at: this.now().toISOString(), ...extra };
  }

  private bareStatus(jobId: string, fence: string, status: JobStatus, detail?: string): JobStatusBody {
    return { t: 'job_status', job_id: jobId, fence, status, at: this.now().toISOString(), ...(detail !== undefined ? { detail } : {}) };
  }

  private detail(job: LiveJob, text: string): string {
    const launch = job.record.launch;
    const secrets =
      launch === undefined ? [] : [...(launch.engine_api_key !== undefined ? [launch.engine_api_key] : []), ...Object.values(launch.env)];
    return boundedText(redact(text, secrets));
  }

  /** Persists the record with `messages` in its outbox, then hands the outbox to the channel. */
  private async commit(job: LiveJob, messages: JobMessageBody[] = []): Promise<void> {
    job.record.updated_at = this.now().toISOString();
    job.record.outbox.push(...messages);
    await this.store.save(job.record);
    await this.flush(job);
  }

  /** Hands the outbox to the channel in order, one flush per job at a time, so nothing is handed twice. */
  private flush(job: LiveJob): Promise<void> {
    const run = async () => {
      clearTimeout(job.flushRetryTimer);
      let handed = 0;
      while (job.record.outbox.length > 0) {
        try {
          await this.channel.enqueue(job.record.outbox[0] as JobMessageBody);
        } catch (error) {
          this.logger.warn({ job_id: job.record.job_id, error: errorText(error) }, 'channel refused a job message; kept for later');
          if (!this.closing)
            job.flushRetryTimer = setTimeout(() => void this.flush(job), this.options.channelRetryMs ?? CHANNEL_RETRY_MS_DEFAULT);
          break;
        }
        job.record.outbox.shift();
        handed += 1;
      }
      if (handed > 0) await this.store.save(job.record);
    };
    job.flushing = job.flushing.then(run, run);
    return job.flushing;
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
      this.logger.warn({ job_id: record.job_id, fence, current: record.fence, kind }, 'stale fence ignored');
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
          ? { evidence: record.evidence ?? {}, access: this.access(job) }
          : record.failure !== undefined
            ? { detail: record.failure }
            : {};
      await this.commit(job, announce && status !== undefined ? [this.status(job, status, extra)] : []);
    }
    return true;
  }

  private serial(job: LiveJob, work: () => Promise<void>): Promise<void> {
    const next = job.chain.then(work).catch((error: unknown) => {
      this.logger.error({ job_id: job.record.job_id, error: errorText(error) }, 'job operation failed');
    });
    job.chain = next;
    return next;
  }

  private assertOpen(): void {
    if (this.closing) throw new Error('JobSupervisor is closed');
    if (!this.started) throw new Error('JobSupervisor.start() has not run');
  }
}

/** Extracts a tar stream into `directory` with the system tar, refusing archives larger than maxBytes. */
function extractTar(archive: Readable, directory: string, maxBytes: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const tar = spawn('tar', ['-x', '-C', directory, '--no-same-owner', '--no-overwrite-dir'], { stdio: ['pipe', 'ignore', 'pipe'] });
    let bytes = 0;
    let stderr = '';
    let failed = false;
    const fail = (error: Error) => {
      if (failed) return;
      failed = true;
      archive.destroy();
      tar.kill('SIGKILL');
      reject(error);
    };
    tar.stderr.setEncoding('utf8');
    tar.stderr.on('data', (chunk: string) => {
      if (stderr.length < 2000) stderr += chunk;
    });
    archive.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > maxBytes) fail(new Error(`job files exceed ${maxBytes} bytes`));
    });
    archive.once('error', (error) => fail(error));
    tar.stdin.on('error', () => undefined);
    archive.pipe(tar.stdin);
    tar.once('error', (error) => fail(error));
    tar.once('close', (code) => {
      if (failed) return;
      if (code === 0) resolve();
      else fail(new Error(`tar exited with ${code}: ${stderr.trim().slice(0, 300)}`));
    });
  });
}
