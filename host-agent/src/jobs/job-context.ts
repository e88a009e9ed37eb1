// What the supervisor's parts share: the resolved options, the adapters, the clock, the live jobs and
// the closing flag. The JobSupervisor builds one and hands it to each part; a test builds one around
// a RecordedContainerRuntime and a ManualClock and drives a single part.
import type { GpuInventorySource } from '../collectors/types.js';
import type { AccessMode, JobSshServer } from '../access/job-ssh-server.js';
import { type Clock, type ClockTimer, type JobLimits, systemClock } from '@ark/shared';
import type { ContainerRuntime, NetworkMode } from '../runtime/container-runtime.js';
import type { PortRange } from '../runtime/port-allocator.js';
import type { JobChannelPort, JobRecord } from './job-record.js';
import { JobLogs } from './job-logs.js';
import { JobOutbox } from './job-outbox.js';
import { JobStore } from './job-store.js';
import { errorText } from './text.js';

export type { AccessMode };

/** Pino-compatible subset, so the composition root can pass its logger straight in. */
export type JobSupervisorLogger = {
  info(detail: Record<string, unknown>, message: string): void;
  warn(detail: Record<string, unknown>, message: string): void;
  error(detail: Record<string, unknown>, message: string): void;
};

export const silentLogger: JobSupervisorLogger = { info: () => undefined, warn: () => undefined, error: () => undefined };

export type JobSupervisorOptions = {
  /** The agent's state directory; jobs live under `<stateDir>/jobs/`. */
  stateDir: string;
  runtime: ContainerRuntime;
  channel: JobChannelPort;
  /** Maps assigned PCI addresses to Docker device IDs; without it a launch naming GPUs fails. */
  gpuInventory?: GpuInventorySource;
  /**
   * The self-test's job-start check (identity only, signed receipt with trigger job_start), run before the container
   * is created: the problem it answers fails the launch with it as the detail. Absent: no check.
   */
  startCheck?: (jobId: string, gpuPciAddresses: readonly string[]) => Promise<string | undefined>;
  /** Host ports for SSH listeners and (with bridge networking) published template ports. */
  portRange: PortRange;
  /** `bridge` in production; `host` where no bridge exists (tests), making container ports host ports. */
  networkMode: Exclude<NetworkMode, 'none'>;
  /** With `bridge`: a user-defined Docker network instead of the engine's default one. */
  network?: string;
  /**
   * What one job may use on this machine (job-limits.ts jobLimitsFor): every container gets these, or the
   * launch's own if lower. Absent: only a launch's own limits apply (a launch without any runs unlimited).
   */
  jobLimits?: JobLimits;
  /** `auto` (default), `default` or a runtime name (job-limits.ts chooseIsolation). */
  jobRuntime?: string;
  /** How often a running job's processes, OOM kills and egress are read (default 10 s). */
  confinementCheckIntervalMs?: number;
  /** How often its disk (volume and writable layer) is measured (default 60 s). */
  diskCheckIntervalMs?: number;
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
  /** The most bytes of one job's output kept on disk, in two rotated halves (default 16 MiB; job-logs.ts). */
  jobLogMaxBytes?: number;
  /** The bytes per second one job's logs may push through the channel (default 256 KiB/s; job-logs.ts). */
  jobLogRateBytesPerS?: number;
  /** Owns every timer and reading of the time (default the system clock). */
  clock?: Clock;
  logger?: JobSupervisorLogger;
};

/** The options with every default applied, in one place. */
export type JobSettings = {
  stateDir: string;
  gpuInventory: GpuInventorySource | undefined;
  startCheck: ((jobId: string, gpuPciAddresses: readonly string[]) => Promise<string | undefined>) | undefined;
  portRange: PortRange;
  networkMode: Exclude<NetworkMode, 'none'>;
  network: string | undefined;
  jobLimits: JobLimits | undefined;
  jobRuntime: string;
  confinementCheckIntervalMs: number;
  diskCheckIntervalMs: number;
  sshBindHost: string;
  publishHost: string;
  probeHost: string;
  stopGraceS: number;
  readinessTimeoutMs: number;
  readinessIntervalMs: number;
  probeTimeoutMs: number;
  pullProgressIntervalMs: number;
  exitWatchIntervalMs: number;
  retrievalSource: 'auto' | 'mountpoint' | 'archive';
  retrievalCopyMaxBytes: number;
  channelRetryMs: number;
  cleanedRetentionMs: number;
  jobLogMaxBytes: number;
  jobLogRateBytesPerS: number;
};

export function resolveJobSettings(options: JobSupervisorOptions): JobSettings {
  return {
    stateDir: options.stateDir,
    gpuInventory: options.gpuInventory,
    startCheck: options.startCheck,
    portRange: options.portRange,
    networkMode: options.networkMode,
    network: options.network,
    jobLimits: options.jobLimits,
    jobRuntime: options.jobRuntime ?? 'auto',
    confinementCheckIntervalMs: options.confinementCheckIntervalMs ?? 10_000,
    diskCheckIntervalMs: options.diskCheckIntervalMs ?? 60_000,
    sshBindHost: options.sshBindHost ?? '0.0.0.0',
    publishHost: options.publishHost ?? '0.0.0.0',
    probeHost: options.probeHost ?? '127.0.0.1',
    stopGraceS: options.stopGraceS ?? 10,
    readinessTimeoutMs: options.readinessTimeoutMs ?? 10 * 60_000,
    readinessIntervalMs: options.readinessIntervalMs ?? 500,
    probeTimeoutMs: options.probeTimeoutMs ?? 3_000,
    pullProgressIntervalMs: options.pullProgressIntervalMs ?? 1000,
    exitWatchIntervalMs: options.exitWatchIntervalMs ?? 5_000,
    retrievalSource: options.retrievalSource ?? 'auto',
    retrievalCopyMaxBytes: options.retrievalCopyMaxBytes ?? 20 * 1024 ** 3,
    channelRetryMs: options.channelRetryMs ?? 5_000,
    cleanedRetentionMs: options.cleanedRetentionMs ?? 7 * 24 * 3_600_000,
    jobLogMaxBytes: options.jobLogMaxBytes ?? 16 * 1024 * 1024,
    jobLogRateBytesPerS: options.jobLogRateBytesPerS ?? 256 * 1024,
  };
}

export const JOB_LABEL = 'ark.job_id';
export const VOLUME_MOUNT_PATH = '/workspace';
export const FAILURE_LOG_LINES = 20;
export const FAILURE_LOG_BYTES = 1200;
/** setTimeout holds at most 2^31-1 ms; longer waits are re-armed. */
export const TIMER_MAX_MS = 2_000_000_000;

/** One job as the supervisor holds it: its persisted record and what lives only in this process. */
export type LiveJob = {
  record: JobRecord;
  /** Serialises stop, clean and meter ticks of one job. */
  chain: Promise<void>;
  launch?: { controller: AbortController; done: Promise<void> };
  meterTimer?: ClockTimer;
  retrievalTimer?: ClockTimer;
  cleanTimer?: ClockTimer;
  cleanAttempts: number;
  /** Serialises hand-overs of the outbox to the channel. */
  flushing: Promise<void>;
  flushRetryTimer?: ClockTimer;
  ssh?: JobSshServer;
  containerState?: string;
  /** When the confinement watch last read the job's counters, and its disk (clock ms; unset: not yet in this run). */
  confinementCheckedAtMs?: number;
  diskCheckedAtMs?: number;
};

export function liveJob(record: JobRecord): LiveJob {
  return { record, chain: Promise.resolve(), cleanAttempts: 0, flushing: Promise.resolve() };
}

export type JobContext = {
  settings: JobSettings;
  runtime: ContainerRuntime;
  store: JobStore;
  outbox: JobOutbox;
  clock: Clock;
  logger: JobSupervisorLogger;
  /** Every job this supervisor holds, by job id. */
  jobs: Map<string, LiveJob>;
  /** Set once close() began: nothing new is started, timers are not re-armed. */
  lifecycle: { closing: boolean };
  /** Each job's captured output and the streams that read it (job-logs.ts). */
  logs: JobLogs;
};

/** The context the JobSupervisor gives its parts; tests build one to drive a single part. */
export function createJobContext(options: JobSupervisorOptions): JobContext {
  const logger = options.logger ?? silentLogger;
  const clock = options.clock ?? systemClock;
  const settings = resolveJobSettings(options);
  const store = new JobStore(options.stateDir, logger);
  const lifecycle = { closing: false };
  const outbox = new JobOutbox({
    store,
    channel: options.channel,
    clock,
    logger,
    retryMs: settings.channelRetryMs,
    isClosing: () => lifecycle.closing,
  });
  const context = { settings, runtime: options.runtime, store, outbox, clock, logger, jobs: new Map(), lifecycle } as Omit<
    JobContext,
    'logs'
  > & {
    logs?: JobLogs;
  };
  context.logs = new JobLogs(context as JobContext, { maxBytes: settings.jobLogMaxBytes, rateBytesPerS: settings.jobLogRateBytesPerS });
  return context as JobContext;
}

/** Runs `work` after the job's previous stop, clean or meter tick; a failure is logged, never thrown. */
export function serial(context: Pick<JobContext, 'logger'>, job: LiveJob, work: () => Promise<void>): Promise<void> {
  const next = job.chain.then(work).catch((error: unknown) => {
    context.logger.error({ job_id: job.record.job_id, error: errorText(error) }, 'job operation failed');
  });
  job.chain = next;
  return next;
}

// The host-key module is loaded on first use, like the SSH server, so an idle agent never holds it.
export const hostKeys = () => import('../access/host-key.js');
