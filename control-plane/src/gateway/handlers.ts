import {
  type ChannelCatalogOf,
  type ChannelMessageOf,
  HANDLED_AGENT_MESSAGE_TYPES,
  type HeartbeatMessage,
  type HandledAgentMessage,
  type HandledAgentMessageType,
  type ReliableAgentMessage,
} from '@ark/shared';
import type { Tx } from '../store/db.js';

/**
 * Applies one reliable message inside the gateway's transaction, which also records the message id as applied:
 * the effect and the dedupe mark commit together or not at all.
 *
 * A handler records a business refusal (an unknown job, a stale fence) and returns; it throws only for a failure
 * worth retrying (the store is down). A throw rolls back, leaves the message unacknowledged and closes the
 * connection, so the agent resends it after its backoff.
 */
export type ReliableHandler<M> = (trx: Tx, machineId: string, msg: M, now: Date) => Promise<void>;

/**
 * Unreliable messages are not queued or deduplicated: a lost one is simply followed by the next. A throw is logged
 * and the message is not acknowledged (a heartbeat's ack tells the agent the control plane is healthy).
 */
export type UnreliableHandler<M> = (machineId: string, msg: M, now: Date) => Promise<void>;

/** The handler a catalog entry calls for: reliable types run in the apply-once transaction. */
export type HandlerFor<K extends keyof C, C = ChannelCatalogOf> = C[K] extends { reliable: true }
  ? ReliableHandler<ChannelMessageOf<K, C>>
  : UnreliableHandler<ChannelMessageOf<K, C>>;

/**
 * One handler per agent message type the table serves, over the catalog's keys: a mapped type, not a Partial, so a
 * type added to the catalog (shared/src/channel/catalog.ts) without its handler in gateway/handlers-table.ts fails
 * the typecheck. Generic over the catalog so a type-level test can extend it (handlers-table.test-d.ts).
 */
export type AgentMessageHandlers<C = ChannelCatalogOf> = { readonly [K in HandledAgentMessageType<C>]: HandlerFor<K, C> };

/** Liveness hooks: a machine completed the handshake, or its connection on this replica ended. */
export type ConnectionHook = (machineId: string, now: Date) => Promise<void>;

/** What gateway/handlers-table.ts fills from the services: every agent message's handler and the liveness hooks. */
export interface ChannelHandlerTable {
  readonly messages: AgentMessageHandlers;
  readonly connected: ConnectionHook;
  readonly disconnected: ConnectionHook;
  /** After the apply-once transaction holding `msg` committed: work to wake that must see the message's effect. */
  readonly committed?: CommitHook;
  /**
   * Messages of one type from several machines applied at once in the group's transaction (group commit across
   * machines): the same effect as the type's handler applied to each in order, in fewer statements. Meter receipts
   * (charged together: services/jobs/metering-batch.ts) and telemetry (merged in two upserts).
   */
  readonly groups?: { readonly [K in GroupedMessageType]?: GroupHandler<ChannelMessageOf<K>> };
}

/** The reliable types a table may apply in groups. */
export type GroupedMessageType = 'meter_receipt' | 'telemetry';

/** A reliable message with the machine whose channel carried it: what a group handler and applyAll take. */
export interface MessageOfMachine<M = ReliableAgentMessage> {
  machineId: string;
  msg: M;
}

/** Applies a group of one type's messages inside the gateway's transaction, as its handler would one by one. */
export type GroupHandler<M> = (trx: Tx, messages: ReadonlyArray<MessageOfMachine<M>>, now: Date) => Promise<void>;

/** Runs after a reliable message's transaction committed; must not throw nor wait (it only wakes work). */
export type CommitHook = (machineId: string, msg: ReliableAgentMessage) => void;

/** The registry keeps handlers of every message type side by side; `on` and `install` are typed per type. */
type AnyHandler = (...args: any[]) => Promise<void>;

/**
 * The agent channel's handler registry. The real table is installed in one place, gateway/handlers-table.ts, from
 * the services; tests add their own spies after it with `on`. Several handlers per type run in registration order
 * (reliable ones in the same transaction).
 */
export class ChannelHandlers {
  readonly #byType = new Map<HandledAgentMessageType, AnyHandler[]>();
  readonly #connect: ConnectionHook[] = [];
  readonly #disconnect: ConnectionHook[] = [];
  readonly #committed: CommitHook[] = [];
  /** The table's group handlers, each with the one handler it stands for. */
  readonly #groups = new Map<string, { group: GroupHandler<ReliableAgentMessage>; single: AnyHandler }>();

  /** Registers every handler of a complete table (the composition root's, through fillChannelHandlers). */
  install(table: ChannelHandlerTable): this {
    for (const type of HANDLED_AGENT_MESSAGE_TYPES) this.#add(type, table.messages[type]);
    if (table.committed) this.#committed.push(table.committed);
    for (const [type, group] of Object.entries(table.groups ?? {}) as Array<[GroupedMessageType, GroupHandler<ReliableAgentMessage>]>) {
      this.#groups.set(type, { group, single: table.messages[type] });
    }
    return this.onConnect(table.connected).onDisconnect(table.disconnected);
  }

  on<K extends HandledAgentMessageType>(type: K, handler: HandlerFor<K>): this {
    if (!HANDLED_AGENT_MESSAGE_TYPES.includes(type)) throw new Error(`not an agent message type of the handler table: ${String(type)}`);
    return this.#add(type, handler);
  }

  onConnect(hook: ConnectionHook): this {
    this.#connect.push(hook);
    return this;
  }

  onDisconnect(hook: ConnectionHook): this {
    this.#disconnect.push(hook);
    return this;
  }

  #add(type: HandledAgentMessageType, handler: AnyHandler): this {
    const list = this.#byType.get(type) ?? [];
    list.push(handler);
    this.#byType.set(type, list);
    return this;
  }

  // ---- dispatch, called by the gateway ----

  /** A reliable message, inside the applying transaction. */
  async apply(trx: Tx, machineId: string, msg: ReliableAgentMessage, now: Date): Promise<void> {
    for (const handler of this.#byType.get(msg.t) ?? []) await handler(trx, machineId, msg, now);
  }

  /**
   * A group of reliable messages, inside one transaction, with the effect of `apply` on each in order. A machine
   * whose messages in the group are all of one type with a group handler (while that type has only the table's
   * handler: a test's spy sees each) goes to that handler with the other such machines; every other machine's
   * messages are applied alone, in order. Machines are independent of each other, and each machine's messages keep
   * their order.
   */
  async applyAll(trx: Tx, messages: readonly MessageOfMachine[], now: Date): Promise<void> {
    if (this.#groups.size === 0 || messages.length < 2) {
      for (const { machineId, msg } of messages) await this.apply(trx, machineId, msg, now);
      return;
    }
    // The one type each machine sent in this group, or null when it sent several.
    const typeOf = new Map<string, string | null>();
    for (const { machineId, msg } of messages) {
      const seen = typeOf.get(machineId);
      typeOf.set(machineId, seen === undefined || seen === msg.t ? msg.t : null);
    }
    const grouped = new Map<string, MessageOfMachine[]>();
    const alone: MessageOfMachine[] = [];
    for (const message of messages) {
      const type = typeOf.get(message.machineId);
      const group = type ? this.#groups.get(type) : undefined;
      const handlers = type ? (this.#byType.get(type as HandledAgentMessageType) ?? []) : [];
      if (type && group && handlers.length === 1 && handlers[0] === group.single) {
        const list = grouped.get(type) ?? [];
        list.push(message);
        grouped.set(type, list);
      } else {
        alone.push(message);
      }
    }
    for (const [type, list] of grouped) {
      if (list.length === 1) await this.apply(trx, list[0]!.machineId, list[0]!.msg, now);
      else await this.#groups.get(type)!.group(trx, list, now);
    }
    for (const { machineId, msg } of alone) await this.apply(trx, machineId, msg, now);
  }

  /** A reliable message's transaction committed (the applier, and tests' deliver). */
  committed(machineId: string, msg: ReliableAgentMessage): void {
    for (const hook of this.#committed) hook(machineId, msg);
  }

  /** An unreliable message of the table (a heartbeat). */
  async receive(machineId: string, msg: Exclude<HandledAgentMessage, ReliableAgentMessage>, now: Date): Promise<void> {
    for (const handler of this.#byType.get(msg.t) ?? []) await handler(machineId, msg, now);
  }

  /** A heartbeat through every handler registered for it (tests drive liveness this way too). */
  heartbeat(machineId: string, msg: HeartbeatMessage, now: Date): Promise<void> {
    return this.receive(machineId, msg, now);
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
