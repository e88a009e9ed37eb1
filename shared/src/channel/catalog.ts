import type { Static, TSchema } from '@sinclair/typebox';
import {
  AckMessage,
  ChallengeMessage,
  CommandAckMessage,
  CommandMessage,
  HardwareReceiptMessage,
  HeartbeatMessage,
  HelloMessage,
  JobEventMessage,
  JobStatusMessage,
  // job logs (issue 25 item 2)
  LogsCancelMessage,
  LogsDataMessage,
  LogsEndMessage,
  LogsOpenMessage,
  // end of job logs
  MeterReceiptMessage,
  NettestReceiptMessage,
  RelayCancelMessage,
  RelayDataMessage,
  RelayEndMessage,
  RelayHeadMessage,
  RelayOpenMessage,
  TelemetryMessage,
  WelcomeMessage,
} from './messages.js';

/**
 * The channel's message catalog: every message type, once, with its schema, who sends it and whether it is resent
 * until acknowledged. The type unions, the codec's validators, the reliable set the agent resends and the gateway
 * applies once, and the control plane's handler table (whose type demands one handler per agent message the table
 * serves) are all derived from it. A type missing here is refused by the codec on both sides.
 */

/** Who sends a message type. */
export type ChannelDirection = 'agent' | 'control-plane';

interface SpecBase<T extends string> {
  /** The payload's schema; its `t` is the catalog key (checked by the type of `defineChannelCatalog`). */
  readonly schema: TSchema & { static: { t: T } };
  /**
   * Queued and resent after every reconnect until acknowledged, and applied once. Agent messages carry `id` and are
   * acknowledged by `ack.upto`; commands carry `command_seq` and are acknowledged by `command_ack.upto`.
   */
  readonly reliable: boolean;
  /**
   * 'mac' where a MAC under the connection's agreed key (session-mac.ts) may stand for the ed25519 signature: frames
   * nobody disputes later (liveness, readings, acknowledgements, relay and log streams). Omitted, the frame must be
   * signed: commands, the handshake, and whatever the agent reports as evidence (receipts, job status).
   */
  readonly auth?: 'mac';
}

/** A message the control plane sends; the agent's client handles every one (its switch is exhaustive). */
export interface ServerMessageSpec<T extends string = string> extends SpecBase<T> {
  readonly from: 'control-plane';
}

/** A message the agent sends. */
export interface AgentMessageSpec<T extends string = string> extends SpecBase<T> {
  readonly from: 'agent';
  /**
   * 'gateway' where the gateway consumes it itself: the handshake, command acknowledgements, the relay tunnel's
   * streams, the job-log streams. Omitted, the control plane's handler table (gateway/handlers-table.ts) must hold its handler.
   */
  readonly consumedBy?: 'gateway';
}

export type ChannelMessageSpec<T extends string = string> = ServerMessageSpec<T> | AgentMessageSpec<T>;

/** Any catalog: the real one, or one a type-level test extends. */
export type ChannelCatalog = { readonly [T in string]: ChannelMessageSpec<T> };

/** Checks, at compile time, that each entry's schema has the entry's key as its `t`. */
export function defineChannelCatalog<const C extends { readonly [T in keyof C & string]: ChannelMessageSpec<T> }>(catalog: C): C {
  return catalog;
}

export const CHANNEL_CATALOG = defineChannelCatalog({
  // ---- control plane -> agent ----
  challenge: { schema: ChallengeMessage, from: 'control-plane', reliable: false },
  welcome: { schema: WelcomeMessage, from: 'control-plane', reliable: false },
  ack: { schema: AckMessage, from: 'control-plane', reliable: false, auth: 'mac' },
  command: { schema: CommandMessage, from: 'control-plane', reliable: true },
  relay_open: { schema: RelayOpenMessage, from: 'control-plane', reliable: false, auth: 'mac' },
  relay_cancel: { schema: RelayCancelMessage, from: 'control-plane', reliable: false, auth: 'mac' },
  // ---- agent -> control plane ----
  hello: { schema: HelloMessage, from: 'agent', reliable: false, consumedBy: 'gateway' },
  command_ack: { schema: CommandAckMessage, from: 'agent', reliable: false, consumedBy: 'gateway', auth: 'mac' },
  relay_head: { schema: RelayHeadMessage, from: 'agent', reliable: false, consumedBy: 'gateway', auth: 'mac' },
  relay_data: { schema: RelayDataMessage, from: 'agent', reliable: false, consumedBy: 'gateway', auth: 'mac' },
  relay_end: { schema: RelayEndMessage, from: 'agent', reliable: false, consumedBy: 'gateway', auth: 'mac' },
  heartbeat: { schema: HeartbeatMessage, from: 'agent', reliable: false, auth: 'mac' },
  telemetry: { schema: TelemetryMessage, from: 'agent', reliable: true, auth: 'mac' },
  meter_receipt: { schema: MeterReceiptMessage, from: 'agent', reliable: true },
  job_status: { schema: JobStatusMessage, from: 'agent', reliable: true },
  job_event: { schema: JobEventMessage, from: 'agent', reliable: true },
  nettest_receipt: { schema: NettestReceiptMessage, from: 'agent', reliable: true },
  hardware_receipt: { schema: HardwareReceiptMessage, from: 'agent', reliable: true },
  // ---- job logs (issue 25 item 2): on demand, unreliable, consumed by the gateway's log tunnel ----
  logs_open: { schema: LogsOpenMessage, from: 'control-plane', reliable: false, auth: 'mac' },
  logs_cancel: { schema: LogsCancelMessage, from: 'control-plane', reliable: false, auth: 'mac' },
  logs_data: { schema: LogsDataMessage, from: 'agent', reliable: false, consumedBy: 'gateway', auth: 'mac' },
  logs_end: { schema: LogsEndMessage, from: 'agent', reliable: false, consumedBy: 'gateway', auth: 'mac' },
  // ---- end of job logs ----
});

export type ChannelCatalogOf = typeof CHANNEL_CATALOG;

// ---- derived types (each takes a catalog, so a test can derive them from an extended one) ----

type KeysWhere<C, Match> = { [K in keyof C & string]: C[K] extends Match ? K : never }[keyof C & string];

/** Every message type. */
export type ChannelMessageType<C = ChannelCatalogOf> = keyof C & string;
/** The payload of one message type. */
export type ChannelMessageOf<K extends keyof C, C = ChannelCatalogOf> = C[K] extends { schema: infer S extends TSchema }
  ? Static<S>
  : never;
/** The types the agent sends. */
export type AgentMessageType<C = ChannelCatalogOf> = KeysWhere<C, { from: 'agent' }>;
/** The types the control plane sends. */
export type ServerMessageType<C = ChannelCatalogOf> = KeysWhere<C, { from: 'control-plane' }>;
/** The agent's reliable types: queued, resent until acknowledged, applied once. */
export type ReliableAgentMessageType<C = ChannelCatalogOf> = KeysWhere<C, { from: 'agent'; reliable: true }>;
/** The agent types the control plane's handler table serves (all but those the gateway consumes itself). */
export type HandledAgentMessageType<C = ChannelCatalogOf> = Exclude<AgentMessageType<C>, KeysWhere<C, { consumedBy: 'gateway' }>>;

type Union<K extends keyof C, C> = { [T in K]: ChannelMessageOf<T, C> }[K];
export type AgentMessage = Union<AgentMessageType, ChannelCatalogOf>;
export type ServerMessage = Union<ServerMessageType, ChannelCatalogOf>;
export type ReliableAgentMessage = Union<ReliableAgentMessageType, ChannelCatalogOf>;
/** An agent message the handler table serves. */
export type HandledAgentMessage = Union<HandledAgentMessageType, ChannelCatalogOf>;

// ---- derived values ----

const entries = Object.entries(CHANNEL_CATALOG) as Array<[ChannelMessageType, ChannelMessageSpec]>;

/** The catalog entry of a type, or undefined for anything not in it (own keys only: `__proto__` is no type). */
export function channelMessageSpec(t: unknown): ChannelMessageSpec | undefined {
  return typeof t === 'string' && Object.hasOwn(CHANNEL_CATALOG, t) ? (CHANNEL_CATALOG as ChannelCatalog)[t] : undefined;
}

/** The agent's reliable types, from the catalog. */
export const RELIABLE_AGENT_MESSAGE_TYPES: ReadonlySet<string> = new Set(
  entries.filter(([, spec]) => spec.from === 'agent' && spec.reliable).map(([t]) => t),
);

/** The agent types the handler table serves, from the catalog. */
export const HANDLED_AGENT_MESSAGE_TYPES: readonly HandledAgentMessageType[] = entries
  .filter(([, spec]) => spec.from === 'agent' && spec.consumedBy !== 'gateway')
  .map(([t]) => t as HandledAgentMessageType);

export function isReliableAgentType(t: unknown): t is ReliableAgentMessageType {
  return typeof t === 'string' && RELIABLE_AGENT_MESSAGE_TYPES.has(t);
}

export function isReliableAgentMessage(msg: AgentMessage): msg is ReliableAgentMessage {
  return RELIABLE_AGENT_MESSAGE_TYPES.has(msg.t);
}

const HANDLED = new Set<string>(HANDLED_AGENT_MESSAGE_TYPES);

export function isHandledAgentMessage(msg: AgentMessage): msg is HandledAgentMessage {
  return HANDLED.has(msg.t);
}
