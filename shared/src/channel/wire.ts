import { Type } from '@sinclair/typebox';
import { COUNTER_MAX } from '../formats.js';

// What every channel message is built from (messages.ts and streams.ts): the protocol's constants and the fields
// each payload carries.

export const CHANNEL_PROTOCOL_VERSION = 1;
/** Frames above this size close the connection. Telemetry batches are sized to stay far below it. */
export const CHANNEL_MAX_FRAME_BYTES = 256 * 1024;
export const TELEMETRY_BATCH_MAX_SAMPLES = 60;
export const CHANNEL_PATH = '/api/v1/agents/channel';

/** A counter that ends up in a 64-bit column: bounded, so a peer's 1e300 is refused at the codec, not by the store. */
export const Counter = (minimum: number) => Type.Integer({ minimum, maximum: COUNTER_MAX });

export const base = <T extends string>(t: T) => ({
  v: Type.Literal(CHANNEL_PROTOCOL_VERSION),
  t: Type.Literal(t),
  sid: Type.String({ minLength: 1, maxLength: 64 }),
  seq: Counter(1),
});

/** An ephemeral X25519 public key (session-mac.ts): 32 bytes in base64. */
export const X25519Key = Type.String({ pattern: '^[A-Za-z0-9+/]{43}=$' });

/** Per-machine reliable message id, persisted by the agent; starts at 1. */
export const MessageId = Counter(1);

/** A relay or job-log stream's id, chosen by the control plane. */
export const StreamId = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' });
