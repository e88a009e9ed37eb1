import type { HeartbeatMessage, ReliableAgentMessage } from '@ark/shared';
import type { Tx } from '../store/db.js';

/** The reliable agent message types: each is applied once per machine and acknowledged cumulatively. */
export type ReliableType = ReliableAgentMessage['t'];
export const RELIABLE_TYPES: readonly ReliableType[] = ['telemetry', 'meter_receipt', 'job_status', 'nettest_receipt'];

export type ReliableMessageOf<K extends ReliableType> = Extract<ReliableAgentMessage, { t: K }>;

/**
 * Applies one reliable message inside the gateway's transaction, which also records the message id as applied:
 * the effect and the dedupe mark commit together or not at all.
 *
 * A handler records a business refusal (an unknown job, a stale fence) and returns; it throws only for a failure
 * worth retrying (the store is down). A throw rolls back, leaves the message unacknowledged and closes the
 * connection, so the agent resends it after its backoff.
 */
export type ReliableHandler<K extends ReliableType> = (trx: Tx, machineId: string, msg: ReliableMessageOf<K>, now: Date) => Promise<void>;

/** Heartbeats are not queued or deduplicated: a lost one is simply followed by the next. */
export type HeartbeatHandler = (machineId: string, msg: HeartbeatMessage, now: Date) => Promise<void>;

/** Liveness hooks: a machine completed the handshake, or its connection on this replica ended. */
export type ConnectionHook = (machineId: string, now: Date) => Promise<void>;

/**
 * The agent channel's handler registry. The real table is filled in one place, gateway/handlers-table.ts, from the
 * services; tests add their own spies. Several handlers per type run in registration order (reliable ones in the
 * same transaction).
 */
export class ChannelHandlers {
  readonly #reliable = new Map<ReliableType, Array<ReliableHandler<any>>>();
  readonly #heartbeat: HeartbeatHandler[] = [];
  readonly #connect: ConnectionHook[] = [];
  readonly #disconnect: ConnectionHook[] = [];

  on(type: 'heartbeat', handler: HeartbeatHandler): this;
  on<K extends ReliableType>(type: K, handler: ReliableHandler<K>): this;
  on(type: ReliableType | 'heartbeat', handler: ReliableHandler<any> | HeartbeatHandler): this {
    if (type === 'heartbeat') return this.onHeartbeat(handler as HeartbeatHandler);
    if (!RELIABLE_TYPES.includes(type)) throw new Error(`not a reliable channel message type: ${String(type)}`);
    const list = this.#reliable.get(type) ?? [];
    list.push(handler as ReliableHandler<any>);
    this.#reliable.set(type, list);
    return this;
  }

  onHeartbeat(handler: HeartbeatHandler): this {
    this.#heartbeat.push(handler);
    return this;
  }

  onConnect(hook: ConnectionHook): this {
    this.#connect.push(hook);
    return this;
  }

  onDisconnect(hook: ConnectionHook): this {
    this.#disconnect.push(hook);
    return this;
  }

  /** Whether any handler is registered for a reliable type (an unhandled type is applied as a no-op, and logged). */
  handles(type: ReliableType): boolean {
    return (this.#reliable.get(type)?.length ?? 0) > 0;
  }

  // ---- dispatch, called by the gateway ----

  async heartbeat(machineId: string, msg: HeartbeatMessage, now: Date): Promise<void> {
    for (const handler of this.#heartbeat) await handler(machineId, msg, now);
  }

  async apply(trx: Tx, machineId: string, msg: ReliableAgentMessage, now: Date): Promise<void> {
    const list = this.#reliable.get(msg.t);
    if (!list) return;
    for (const handler of list) await handler(trx, machineId, msg, now);
  }

  async connected(machineId: string, now: Date): Promise<void> {
    for (const hook of this.#connect) await hook(machineId, now);
  }

  async disconnected(machineId: string, now: Date): Promise<void> {
    for (const hook of this.#disconnect) await hook(machineId, now);
  }
}

/** How the gateway finds the key a machine signs with. The real one reads the machines table. */
export interface MachineDirectory {
  /** The machine's base64 ed25519 public key, or null when it is unknown or may not connect. */
  publicKeyOf(machineId: string): Promise<string | null>;
}
