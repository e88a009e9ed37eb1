import { createHmac, createPublicKey, diffieHellman, generateKeyPairSync, hkdfSync, type KeyObject, timingSafeEqual } from 'node:crypto';

/**
 * The channel's per-connection MAC keys (DESIGN.md, budgets: "heartbeats and telemetry may instead carry a MAC under
 * a per-connection key agreed in the signed handshake"). One ed25519 verification costs 125-180 us on our machines
 * and signing 60 us; HMAC-SHA256 of a frame costs a few. So frames nobody will ever dispute (heartbeats, telemetry,
 * acks, relay and log streams) are authenticated by a MAC; the ones that may be disputed later (meter, hardware and
 * nettest receipts, job status with its readiness evidence, commands) keep their ed25519 signatures.
 *
 * The agreement: an agent that asks for it (`mac=1` on the upgrade URL) gets an ephemeral X25519 public key (`kx`)
 * in the control plane's challenge, which that key's signature covers; it answers with its own in the hello, which
 * the machine's key signs. Each side derives the shared secret, and HKDF-SHA256 over it (salt: the challenge, info:
 * the session id and machine id) gives one key per direction. Only the two holders of the signing keys can know the
 * secret, so a MAC under it is as authentic for that connection as a signature; a frame recorded on one connection
 * fails on every other (another secret), and within one the sequence number refuses a replay. The ephemeral keys
 * live only as long as the connection.
 */

/** Computes a frame's MAC over the exact UTF-8 bytes of its payload (given as those bytes, or as the text). */
export type FrameMacSigner = (bytes: Uint8Array | string) => Uint8Array;
/** Checks a frame's MAC (in constant time), over the payload's UTF-8 bytes or its text. */
export type FrameMacVerifier = (bytes: Uint8Array | string, mac: Uint8Array) => boolean;

/** The MAC keys of one connection, from each side's point of view. */
export interface SessionMacKeys {
  /** MACs this side's outgoing frames. */
  readonly seal: FrameMacSigner;
  /** Checks the other side's frames. */
  readonly check: FrameMacVerifier;
}

/** An X25519 public key as the wire carries it: 32 raw bytes in canonical base64. */
export const X25519_PUBLIC_KEY_PATTERN = /^[A-Za-z0-9+/]{43}=$/;

/** The bytes of an HMAC-SHA256. */
export const FRAME_MAC_BYTES = 32;

// DER prefix of a raw X25519 public key's SubjectPublicKeyInfo (RFC 8410).
const SPKI_X25519_PREFIX = Buffer.from('302a300506032b656e032100', 'hex');
const HKDF_INFO_LABEL = 'ark channel mac v1';

/** One side's ephemeral half of the agreement. */
export interface KeyExchange {
  /** This side's public key, for the challenge (control plane) or the hello (agent). */
  readonly publicKey: string;
  /**
   * The connection's keys from the peer's public key and the handshake's facts. Throws when the peer's key is not an
   * X25519 key or yields no secret (a low-order point): the caller refuses the handshake.
   */
  derive(peerPublicKey: string, context: MacContext): SessionMacKeys;
}

/** What the keys are bound to: the handshake they were agreed in. */
export interface MacContext {
  /** Which end this is: the control plane seals with the control-plane-to-agent key, the agent with the other. */
  readonly side: 'agent' | 'control-plane';
  readonly challenge: string;
  readonly sid: string;
  readonly machineId: string;
}

/** A fresh ephemeral X25519 key pair; each connection makes its own. */
export function createKeyExchange(): KeyExchange {
  const { privateKey, publicKey } = generateKeyPairSync('x25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(SPKI_X25519_PREFIX.length);
  return {
    publicKey: raw.toString('base64'),
    derive: (peerPublicKey, context) => deriveSessionMacKeys(privateKey, peerPublicKey, context),
  };
}

function x25519PublicKey(base64: string): KeyObject {
  const raw = X25519_PUBLIC_KEY_PATTERN.test(base64) ? Buffer.from(base64, 'base64') : Buffer.alloc(0);
  if (raw.length !== 32 || raw.toString('base64') !== base64) throw new Error('an X25519 public key is 32 bytes in canonical base64');
  return createPublicKey({ key: Buffer.concat([SPKI_X25519_PREFIX, raw]), format: 'der', type: 'spki' });
}

function deriveSessionMacKeys(privateKey: KeyObject, peerPublicKey: string, context: MacContext): SessionMacKeys {
  const secret = diffieHellman({ privateKey, publicKey: x25519PublicKey(peerPublicKey) });
  // A low-order peer key gives the all-zero secret, which an attacker could know: refused (RFC 7748 section 6.1).
  if (secret.every((byte) => byte === 0)) throw new Error('the X25519 agreement gave the all-zero secret');
  const info = Buffer.from([HKDF_INFO_LABEL, context.sid, context.machineId].join('\0'), 'utf8');
  const okm = Buffer.from(hkdfSync('sha256', secret, Buffer.from(context.challenge, 'utf8'), info, 2 * FRAME_MAC_BYTES));
  const agentToControlPlane = okm.subarray(0, FRAME_MAC_BYTES);
  const controlPlaneToAgent = okm.subarray(FRAME_MAC_BYTES);
  const [sealKey, checkKey] =
    context.side === 'agent' ? [agentToControlPlane, controlPlaneToAgent] : [controlPlaneToAgent, agentToControlPlane];
  return { seal: hmacSigner(sealKey), check: hmacVerifier(checkKey) };
}

/** HMAC-SHA256 under `key`; text is taken as its UTF-8 bytes (no copy into a Buffer first). */
export function hmacSigner(key: Uint8Array): FrameMacSigner {
  return (bytes) =>
    (typeof bytes === 'string' ? createHmac('sha256', key).update(bytes, 'utf8') : createHmac('sha256', key).update(bytes)).digest();
}

/** Checks HMAC-SHA256 under `key`, in constant time. */
export function hmacVerifier(key: Uint8Array): FrameMacVerifier {
  const sign = hmacSigner(key);
  return (bytes, mac) => mac.length === FRAME_MAC_BYTES && timingSafeEqual(sign(bytes), mac);
}
