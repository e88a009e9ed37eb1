import type {
  Clock,
  CommandMessage,
  FrameSigner,
  HeartbeatMessage,
  LogsCancelMessage,
  LogsOpenMessage,
  RelayCancelMessage,
  RelayOpenMessage,
} from '@ark/shared';

// The channel client's surface: what it is given (options, a logger) and what it reports (state, status).

/** The heartbeat's content; the channel adds v, sid and seq. */
export type HeartbeatBody = Omit<HeartbeatMessage, 'v' | 'sid' | 'seq'>;

export interface ChannelLogger {
  debug?(detail: Record<string, unknown>, message: string): void;
  info(detail: Record<string, unknown>, message: string): void;
  warn(detail: Record<string, unknown>, message: string): void;
  error(detail: Record<string, unknown>, message: string): void;
}

export interface ChannelClientOptions {
  /** ws:// or wss:// URL of the channel, including `?v=1` (the enrollment answer's channel_url). */
  url: string;
  machineId: string;
  /** 64-byte tweetnacl secret key. */
  secretKey: Uint8Array;
  /** base64 ed25519 key pinned at enrollment: every control-plane frame must verify under it. */
  controlPlanePublicKey: string;
  /** Where the resend queue and the command counter live. */
  stateDir: string;
  agentVersion: string;
  /**
   * Applies one command. Called once per command_seq, in order, one at a time; the command is acknowledged when
   * it resolves (or throws: the failure is logged and reported through the agent's own messages, never retried,
   * so one bad command cannot wedge the ones behind it). Record the intent and return; long work runs after.
   */
  onCommand: (command: CommandMessage) => Promise<void>;
  /** Relay frames (jobs/engine-relay.ts): handed over as they come, never acknowledged or resent. */
  onRelay?: (msg: RelayOpenMessage | RelayCancelMessage) => void;
  /** Job-log requests (jobs/job-logs.ts): handed over as they come, never acknowledged or resent. */
  onLogs?: (msg: LogsOpenMessage | LogsCancelMessage) => void;
  /** Called each time the channel is established (welcome received). */
  onConnected?: () => void;
  logger: ChannelLogger;
  /** Defaults to node:crypto ed25519 with secretKey (signer.ts). */
  signer?: FrameSigner;
  /**
   * Ask for per-connection MAC keys (`mac=1`; shared/src/channel/session-mac.ts), so heartbeats, telemetry and
   * acknowledgements travel under an HMAC instead of an ed25519 signature each; receipts and job status stay signed.
   * Default true; false speaks signatures only, as agents before it did.
   */
  sessionMac?: boolean;
  /** Reconnect delay: doubles from initialMs up to maxMs, each with jitter (half to all of it). */
  backoff?: { initialMs?: number; maxMs?: number };
  /** Unacknowledged messages kept on disk (the oldest telemetry is dropped first beyond it). */
  maxQueueEntries?: number;
  /** Reliable messages in flight (sent, unacknowledged) per connection. */
  sendWindow?: number;
  /** Opening plus handshake must finish within this. */
  connectTimeoutMs?: number;
  /** How often the connection's liveness is checked. */
  watchdogIntervalMs?: number;
  /** A heartbeat unanswered this long drops the connection; default two of the welcome's heartbeat intervals. */
  heartbeatAckTimeoutMs?: number;
  /** fsync the queue (off only where a test measures something else). */
  durable?: boolean;
  /** Owns the watchdog, the reconnect timer and every reading of the time (default the system clock). */
  clock?: Clock;
  random?: () => number;
}

export type ChannelState = 'idle' | 'connecting' | 'handshaking' | 'ready' | 'backoff' | 'stopped';

export interface ChannelStatus {
  state: ChannelState;
  connected: boolean;
  sessionId: string | null;
  /**
   * How this connection authenticates the frames that may take a MAC: 'mac' when the handshake agreed keys,
   * 'signature' when the control plane offered none (one older than MAC keys) or this agent did not ask. Null when
   * not connected.
   */
  frameAuth: 'mac' | 'signature' | null;
  connectedSince: string | null;
  lastHeartbeatAckAt: string | null;
  /** Reliable messages not yet acknowledged. */
  queued: number;
  nextMessageId: number;
  ackedUpto: number;
  commandsAppliedUpto: number;
  duplicateCommands: number;
  droppedTelemetry: number;
  reconnects: number;
  lastError: string | null;
  /** While in backoff: when the next attempt starts. */
  nextAttemptAt: string | null;
}
