// What the Agent is handed: the narrow interfaces it needs from its parts (the channel, the job runtime, timers, a
// logger) and the options main.ts builds. Apart from agent.ts so that the parts (channel-adapter.ts, job-runtime.ts,
// cli/context.ts) depend on these shapes, not on the Agent class.
import type {
  CommandKind,
  CommandMessage,
  HardwareReceiptMessage,
  HeartbeatMessage,
  JobEventMessage,
  JobStatusMessage,
  MeterReceiptMessage,
  LogsCancelMessage,
  LogsOpenMessage,
  RelayCancelMessage,
  RelayOpenMessage,
  RunNettestBody,
} from '@ark/shared';
import type { GpuCollector, HostCollector } from './collectors/index.js';
import type { EngineTarget, RelayReply } from './jobs/engine-relay.js';
import type { LogsReply } from './jobs/job-logs.js';
import type { AgentMetricsHooks } from './metrics/hooks.js';
import type { MeasureOptions, NettestBounds, NettestMeasurement } from './nettest/measure.js';
import type { NettestReceiptBody } from './nettest/runner.js';
import type { AgentSelftest } from './selftest/selftest-service.js';
import type { AgentStatusReport } from './state.js';
import type { TelemetryBatchBody } from './telemetry/pipeline.js';

/** The heartbeat's content; the channel adds v, sid and seq. */
export type HeartbeatBody = Omit<HeartbeatMessage, 'v' | 'sid' | 'seq'>;

type Body<M> = M extends unknown ? Omit<M, 'v' | 'sid' | 'seq' | 'id'> : never;
/** A reliable message's content; the channel adds v, sid, seq and the per-machine id. */
export type ReliableBody =
  | TelemetryBatchBody
  | NettestReceiptBody
  | Body<JobStatusMessage>
  | Body<MeterReceiptMessage>
  | Body<JobEventMessage>
  | Body<HardwareReceiptMessage>;

/** What the agent needs from the channel client (host-agent/src/channel). */
export interface AgentChannel {
  start(): void | Promise<void>;
  stop(): void | Promise<void>;
  /** Unreliable: dropped while disconnected. */
  sendHeartbeat(body: HeartbeatBody): unknown;
  /** Reliable: persisted, sent when connected, resent until acknowledged. */
  enqueue(body: ReliableBody): unknown;
  status(): object;
  /** Channel events ('connected', 'disconnected', 'ack'): the agent refreshes its status report on them. */
  on?(event: 'connected' | 'disconnected' | 'ack', listener: () => void): unknown;
  /** Unreliable relay frames (jobs/engine-relay.ts): sent on the current connection, false without one. */
  sendRelay?(body: RelayReply): boolean;
  /** Unreliable job-log frames (jobs/job-logs.ts): sent on the current connection, false without one. */
  sendLogs?(body: LogsReply): boolean;
}

export interface AgentTimers {
  setInterval(callback: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
}

export type AgentLogger = {
  info(detail: Record<string, unknown>, message: string): void;
  warn(detail: Record<string, unknown>, message: string): void;
  error(detail: Record<string, unknown>, message: string): void;
};

export type CommandHandler = (command: CommandMessage) => Promise<void>;

/** The job runtime as the agent sees it (the JobSupervisor, host-agent/src/jobs). */
export interface AgentJobs {
  /** Loads persisted jobs and takes them over; job commands wait for it. */
  start(): Promise<void>;
  handleCommand(command: CommandMessage): Promise<void>;
  runningJobs(): HeartbeatBody['running_jobs'];
  /** Where a ready model job's engine answers, for the relay (absent: no relay). */
  engineTarget?(jobId: string, fence: string): EngineTarget | undefined;
  /** A job-log request from the control plane (absent: none is answered). */
  handleLogs?(msg: LogsOpenMessage | LogsCancelMessage, send: (body: LogsReply) => boolean): void;
  /** The connection ended: its log streams end. */
  abortLogStreams?(): void;
  /** Stops timers and listeners, leaving containers to the next run. */
  close(): Promise<void>;
}

/** The reliable queue a job runtime reports through: job_status, meter_receipt and job_event bodies. */
export type JobMessagePort = { enqueue(body: Body<JobStatusMessage> | Body<MeterReceiptMessage> | Body<JobEventMessage>): unknown };

export interface AgentOptions {
  machineId: string;
  agentVersion: string;
  /** Extra, constant facts for the status report (control-plane URL, channel URL). */
  describe?: Record<string, unknown>;
  /** Builds the channel; the agent hands it the command callback. */
  createChannel: (handlers: {
    onCommand: (command: CommandMessage) => Promise<void>;
    onRelay?: (msg: RelayOpenMessage | RelayCancelMessage) => void;
    onLogs?: (msg: LogsOpenMessage | LogsCancelMessage) => void;
  }) => AgentChannel;
  gpu: GpuCollector;
  host: HostCollector;
  heartbeatIntervalMs: number;
  telemetrySampleIntervalMs: number;
  telemetryBatchIntervalMs: number;
  telemetryBufferSamples: number;
  nettestBounds: NettestBounds;
  /** Replaces the real measurement (tests). */
  measureNetwork?: (command: RunNettestBody, options: MeasureOptions) => Promise<NettestMeasurement>;
  /** Problems that make the machine unhealthy (empty when healthy). */
  checkHealth: () => Promise<string[]>;
  /** Handlers for command kinds other than run_nettest; they take precedence over the job runtime. */
  commandHandlers?: Partial<Record<CommandKind, CommandHandler>>;
  /**
   * Builds the job runtime over the channel's reliable queue (and the self-test, for the job-start identity check);
   * without it job commands are answered as failed.
   */
  createJobs?: (channel: JobMessagePort, selftest: AgentSelftest | undefined) => AgentJobs;
  /**
   * Builds the self-test (selftest/selftest-service.ts) over the channel's reliable queue: run_selftest commands and
   * the job-start identity check. Without it run_selftest is answered by nothing (an older agent's behaviour).
   */
  createSelftest?: (enqueue: (body: Body<HardwareReceiptMessage>) => unknown, onReceipt: () => void) => AgentSelftest;
  /** Persists the status report for `ark-agent status`; failures are logged, never fatal. */
  writeStatus: (report: AgentStatusReport) => Promise<void>;
  now?: () => Date;
  timers?: AgentTimers;
  logger: AgentLogger;
  pid?: number;
  /** How long stop() waits for a running network test to finish and queue its receipt. */
  shutdownGraceMs?: number;
  /** The Prometheus exporter's hooks (metrics/prometheus.ts) when metrics are configured. */
  metrics?: AgentMetricsHooks;
}
