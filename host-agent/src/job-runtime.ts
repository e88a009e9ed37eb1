import { availableParallelism, totalmem } from 'node:os';
import type { AgentJobs, JobMessagePort } from './agent-ports.js';
import type { Clock } from '@ark/shared';
import type { GpuInventorySource } from './collectors/index.js';
import type { AgentConfig } from './config.js';
import type { JobMessageBody } from './jobs/job-record.js';
import { jobLimitsFor } from './jobs/job-limits.js';
import { JobSupervisor, type JobSupervisorLogger } from './jobs/job-supervisor.js';
import type { AgentMetricsHooks } from './metrics/hooks.js';
import type { ContainerRuntime } from './runtime/container-runtime.js';
import { LazyDockerRuntime } from './runtime/lazy-docker-runtime.js';

export interface JobRuntimeSettings {
  config: Pick<AgentConfig, 'stateDir' | 'docker' | 'jobPortRange' | 'jobs'>;
  channel: JobMessagePort;
  gpuInventory: GpuInventorySource;
  logger: JobSupervisorLogger;
  /** Replaces the Docker engine at the configured socket (tests). */
  runtime?: ContainerRuntime;
  /** The self-test's job-start identity check (selftest/selftest-service.ts checkJobStart). */
  startCheck?: (jobId: string, gpuPciAddresses: readonly string[]) => Promise<string | undefined>;
  /** Owns the job runtime's timers and time (default the system clock). */
  clock?: Clock;
  /** The metrics exporter's hooks: each image pull is reported to it (outcome, duration, size). */
  metrics?: Pick<AgentMetricsHooks, 'imagePull'>;
}

/**
 * The job runtime of `ark-agent run`: a JobSupervisor over the configured Docker engine, reporting through the
 * channel's reliable queue. Ready statuses carry the configured public host, so the control plane hands renters
 * the address this machine is reached at.
 */
export function createJobRuntime(settings: JobRuntimeSettings): AgentJobs {
  const { config } = settings;
  const publicHost = config.jobs.publicHost;
  const runtime = settings.runtime ?? new LazyDockerRuntime({ socketPath: config.docker.socketPath });
  return new JobSupervisor({
    stateDir: config.stateDir,
    runtime: settings.metrics === undefined ? runtime : observePulls(runtime, settings.metrics),
    channel: { enqueue: (message: JobMessageBody) => settings.channel.enqueue(withPublicHost(message, publicHost)) },
    gpuInventory: settings.gpuInventory,
    ...(settings.startCheck === undefined ? {} : { startCheck: settings.startCheck }),
    portRange: { first: config.jobPortRange.from, last: config.jobPortRange.to },
    networkMode: config.jobs.networkMode,
    ...(config.jobs.network !== null ? { network: config.jobs.network } : {}),
    // The machine as it is now, less the reserve: a launch announcing more (the manifest's, from enrollment) gets this.
    jobLimits: jobLimitsFor({ cpuCores: availableParallelism(), ramBytes: BigInt(totalmem()) }, config.jobs.reserve, config.jobs.ceilings),
    jobRuntime: config.jobs.runtime,
    confinementCheckIntervalMs: config.jobs.checkIntervalMs,
    diskCheckIntervalMs: config.jobs.diskCheckIntervalMs,
    jobLogMaxBytes: config.jobs.logMaxBytes,
    jobLogRateBytesPerS: config.jobs.logRateBytesPerS,
    sshBindHost: config.jobs.sshBindHost,
    publishHost: config.jobs.publishHost,
    logger: settings.logger,
    ...(settings.clock === undefined ? {} : { clock: settings.clock }),
  });
}

/** The same runtime, with each pullImage call timed and reported; every other method goes to it unchanged. */
export function observePulls(runtime: ContainerRuntime, metrics: Pick<AgentMetricsHooks, 'imagePull'>): ContainerRuntime {
  const pullImage: ContainerRuntime['pullImage'] = async (reference, options) => {
    const started = performance.now();
    try {
      const image = await runtime.pullImage(reference, options);
      metrics.imagePull(image.pulled ? 'pulled' : 'present', (performance.now() - started) / 1000, image.sizeBytes);
      return image;
    } catch (error) {
      metrics.imagePull('failed', (performance.now() - started) / 1000, undefined);
      throw error;
    }
  };
  return new Proxy(runtime, {
    get(target, property) {
      if (property === 'pullImage') return pullImage;
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** Adds `access.public_host` to a status that reports access, when one is configured. */
export function withPublicHost(message: JobMessageBody, publicHost: string | null): JobMessageBody {
  if (publicHost === null || message.t !== 'job_status' || message.access === undefined) return message;
  return { ...message, access: { ...message.access, public_host: publicHost } };
}
