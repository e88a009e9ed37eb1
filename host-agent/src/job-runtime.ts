import type { AgentJobs, JobMessagePort } from './agent.js';
import type { Clock } from './clock/clock.js';
import type { GpuInventorySource } from './collectors/index.js';
import type { AgentConfig } from './config.js';
import type { JobMessageBody } from './jobs/job-record.js';
import { JobSupervisor, type JobSupervisorLogger } from './jobs/job-supervisor.js';
import type { ContainerRuntime } from './runtime/container-runtime.js';
import { LazyDockerRuntime } from './runtime/lazy-docker-runtime.js';

export interface JobRuntimeSettings {
  config: Pick<AgentConfig, 'stateDir' | 'docker' | 'jobPortRange' | 'jobs'>;
  channel: JobMessagePort;
  gpuInventory: GpuInventorySource;
  logger: JobSupervisorLogger;
  /** Replaces the Docker engine at the configured socket (tests). */
  runtime?: ContainerRuntime;
  /** Owns the job runtime's timers and time (default the system clock). */
  clock?: Clock;
}

/**
 * The job runtime of `ark-agent run`: a JobSupervisor over the configured Docker engine, reporting through the
 * channel's reliable queue. Ready statuses carry the configured public host, so the control plane hands renters
 * the address this machine is reached at.
 */
export function createJobRuntime(settings: JobRuntimeSettings): AgentJobs {
  const { config } = settings;
  const publicHost = config.jobs.publicHost;
  return new JobSupervisor({
    stateDir: config.stateDir,
    runtime: settings.runtime ?? new LazyDockerRuntime({ socketPath: config.docker.socketPath }),
    channel: { enqueue: (message: JobMessageBody) => settings.channel.enqueue(withPublicHost(message, publicHost)) },
    gpuInventory: settings.gpuInventory,
    portRange: { first: config.jobPortRange.from, last: config.jobPortRange.to },
    networkMode: config.jobs.networkMode,
    sshBindHost: config.jobs.sshBindHost,
    publishHost: config.jobs.publishHost,
    logger: settings.logger,
    ...(settings.clock === undefined ? {} : { clock: settings.clock }),
  });
}

/** Adds `access.public_host` to a status that reports access, when one is configured. */
export function withPublicHost(message: JobMessageBody, publicHost: string | null): JobMessageBody {
  if (publicHost === null || message.t !== 'job_status' || message.access === undefined) return message;
  return { ...message, access: { ...message.access, public_host: publicHost } };
}
