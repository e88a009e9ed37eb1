import type { Clock, CommandMessage } from '@ark/shared';
import type { AgentChannel, AgentJobs, AgentLogger } from '../agent-ports.js';
import type { GpuCollector, GpuIdentitySource, GpuInventorySource, HostCollector } from '../collectors/index.js';
import type { AgentConfig } from '../config.js';
import type { JobRuntimeSettings } from '../job-runtime.js';
import type { MachineFacts } from '../manifest.js';
import type { ContainerRuntime } from '../runtime/container-runtime.js';

/** What the channel client needs to connect as this machine. */
export interface ChannelSettings {
  url: string;
  machineId: string;
  /** 64-byte tweetnacl secret key. */
  secretKey: Uint8Array;
  controlPlanePublicKey: string;
  stateDir: string;
  agentVersion: string;
  onCommand: (command: CommandMessage) => Promise<void>;
  /** Called each time the channel is established (welcome received). */
  onConnected: () => void;
  logger: AgentLogger;
  /** Owns the channel's timers and time. */
  clock?: Clock;
}

export type CliLogger = AgentLogger & { debug(detail: Record<string, unknown>, message: string): void; flush?: () => void };

/** Everything the commands use from the outside world; main.ts builds the real one. */
export interface CliContext {
  config: AgentConfig;
  agentVersion: string;
  out: (text: string) => void;
  err: (text: string) => void;
  fetch: typeof fetch;
  /** The daemon's one clock: the channel, the job runtime and the agent's timers all run on it. */
  clock: Clock;
  now: () => Date;
  sleep: (ms: number) => Promise<void>;
  /** `destination` is where log lines go: the daemon logs to stdout, interactive commands to stderr. */
  createLogger: (destination: 'stdout' | 'stderr') => CliLogger;
  /** `onError` is called on each failed read (the metrics count collector errors); a recorded collector never fails. */
  createGpuCollector: (logger: CliLogger, onError?: () => void) => Promise<GpuCollector & GpuInventorySource & GpuIdentitySource>;
  createHostCollector: (logger: CliLogger, onError?: () => void) => HostCollector;
  readMachineFacts: (diskPath: string) => Promise<MachineFacts>;
  createChannel: (settings: ChannelSettings) => AgentChannel;
  /** The container engine the self-test's benchmark runs on; absent: the configured Docker socket. */
  createContainerRuntime?: () => ContainerRuntime;
  /** Builds the job runtime (launch_job, stop_job, clean_job); without it the daemon runs no jobs. */
  createJobs?: (settings: JobRuntimeSettings) => AgentJobs;
  /** Resolves with the first of these signals to arrive. */
  waitForSignal: (signals: NodeJS.Signals[]) => Promise<NodeJS.Signals>;
  isProcessAlive: (pid: number) => boolean;
}

/** A failure the host can act on: printed as `ark-agent: <message>` with this exit code. */
export class CliError extends Error {
  override name = 'CliError';
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}
