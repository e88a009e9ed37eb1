import { assertMove, type MoveTable } from '../moves.js';

// x402 v2 top-ups (scheme `exact`, EIP-3009 transferWithAuthorization of USDC on Base): what we offer, the checks a
// payment must pass before anything touches the chain, and the intent's states. Pure: values in, decisions out.

/** The x402 protocol version we speak; the v1 header name X-PAYMENT is accepted, carrying a v2 payload. */
export const X402_VERSION = 2;
export const X402_SCHEME = 'exact';
/** CAIP-2 id of the primary network (contract part 4: eip155:8453). */
export const X402_NETWORK = 'eip155:8453';
/** USDC's EIP-712 domain on Base. */
export const USDC_DOMAIN = { name: 'USD Coin', version: '2' } as const;
/** An authorization must stay valid this long after we accept it, or it could expire while the transaction waits. */
export const VALID_BEFORE_MARGIN_S = 6n;
/**
 * How far past `now + maxTimeoutSeconds` validBefore may reach: the payer's clock may run ahead of ours. A longer
 * window is refused, or a signed authorization could be held back and settled long after the offer it answered.
 */
export const VALID_BEFORE_SKEW_S = 60n;

/**
 * VERIFIED: checked and persisted, no transaction yet. SETTLING: the transaction is signed and stored (then sent),
 * not mined. PENDING_FINALITY: mined, not final. CONFIRMED: credited once. EXCEPTION: the authorization was
 * cancelled, expired unmined or used elsewhere (`reason`). REFUSED: the chain refused it before anything was sent
 * (a failed simulation); a replay gets the same 402.
 */
export const X402_INTENT_STATES = ['VERIFIED', 'SETTLING', 'PENDING_FINALITY', 'CONFIRMED', 'EXCEPTION', 'REFUSED'] as const;
export type X402IntentState = (typeof X402_INTENT_STATES)[number];

/**
 * The allowed state moves of an intent; the store's intent writes (store/x402.ts) check every one. Written by
 * services/billing/x402-settlement.ts:
 *
 *   VERIFIED         -> SETTLING           the settlement is signed and stored, before it is sent
 *   VERIFIED         -> PENDING_FINALITY   someone else's transaction used the authorization and paid the treasury
 *   VERIFIED         -> EXCEPTION          cancelled, or expired before anything was sent
 *   VERIFIED         -> REFUSED            the simulation refused it: nothing was sent
 *   SETTLING         -> PENDING_FINALITY   mined (ours, or another that paid the treasury)
 *   SETTLING         -> EXCEPTION          reverted, cancelled, or expired unmined
 *   PENDING_FINALITY -> SETTLING           its block is no longer canonical: followed again
 *   PENDING_FINALITY -> CONFIRMED          final: credited once, in the same transaction
 *
 * Every intent is stored first as VERIFIED. CONFIRMED, EXCEPTION and REFUSED are final.
 */
export const X402_INTENT_MOVES: MoveTable<X402IntentState> = {
  VERIFIED: ['SETTLING', 'PENDING_FINALITY', 'EXCEPTION', 'REFUSED'],
  SETTLING: ['PENDING_FINALITY', 'EXCEPTION'],
  PENDING_FINALITY: ['SETTLING', 'CONFIRMED'],
  CONFIRMED: [],
  EXCEPTION: [],
  REFUSED: [],
};

/** Throws ForbiddenStateMove unless an intent may move `from -> to`. */
export function assertX402IntentMove(from: X402IntentState, to: X402IntentState): void {
  assertMove('x402 intent', X402_INTENT_MOVES, from, to);
}

/** Why a payment is refused (the 402 body's `error`). */
export type X402Refusal =
  | 'payment_required'
  | 'invalid_payload'
  | 'invalid_x402_version'
  | 'unsupported_scheme'
  | 'invalid_network'
  | 'invalid_asset'
  | 'invalid_amount'
  | 'invalid_recipient'
  | 'requirements_mismatch'
  | 'authorization_not_yet_valid'
  | 'authorization_expired'
  | 'authorization_valid_too_long'
  | 'invalid_signature'
  | 'authorization_already_used'
  | 'insufficient_funds'
  | 'settlement_refused';

export interface PaymentRequirements {
  scheme: string;
  network: string;
  amount: string;
  asset: string;
  payTo: string;
  maxTimeoutSeconds: number;
  extra: { name: string; version: string };
}

export type Hex = `0x${string}`;

export interface Eip3009Authorization {
  from: Hex;
  to: Hex;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: Hex;
}

/** The one requirement we offer: exactly `amountMicro` USDC (6 decimals: one micro is one unit) to the treasury. */
export function paymentRequirements(input: {
  amountMicro: bigint;
  usdc: Hex;
  treasury: Hex;
  maxTimeoutS: number;
  checksum: (a: Hex) => Hex;
}): PaymentRequirements {
  return {
    scheme: X402_SCHEME,
    network: X402_NETWORK,
    amount: input.amountMicro.toString(),
    asset: input.checksum(input.usdc),
    payTo: input.checksum(input.treasury),
    maxTimeoutSeconds: input.maxTimeoutS,
    extra: { ...USDC_DOMAIN },
  };
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const NONCE = /^0x[0-9a-fA-F]{64}$/;
const UINT = /^(0|[1-9][0-9]{0,77})$/;
const SIGNATURE = /^0x[0-9a-fA-F]{130}$/;

export type PaymentCheck =
  | { ok: true; authorization: Eip3009Authorization; signature: Hex }
  | { ok: false; reason: X402Refusal; message: string };

const refuse = (reason: X402Refusal, message: string): PaymentCheck => ({ ok: false, reason, message });

/**
 * Everything about a decoded payment payload that needs no chain and no cryptography: its shape, that `accepted`
 * is what we offered, that the authorization pays the treasury exactly the amount, and its time window
 * (`validAfter <= now < validBefore - 6 s`, `validBefore <= now + maxTimeoutSeconds + 60 s`). The signature, the nonce's state and the payer's balance come after.
 */
export function checkPaymentPayload(payload: unknown, offered: PaymentRequirements, nowS: bigint): PaymentCheck {
  if (!isObject(payload)) return refuse('invalid_payload', 'The payment header is not a JSON object.');
  if (payload.x402Version !== X402_VERSION) return refuse('invalid_x402_version', 'Only x402 version 2 payloads are accepted.');
  const accepted = payload.accepted;
  if (!isObject(accepted)) return refuse('invalid_payload', 'The payment payload has no `accepted` requirements.');
  if (accepted.scheme !== offered.scheme) return refuse('unsupported_scheme', 'Only the exact scheme is accepted.');
  if (accepted.network !== offered.network) return refuse('invalid_network', `Only ${offered.network} is accepted.`);
  if (typeof accepted.asset !== 'string' || accepted.asset.toLowerCase() !== offered.asset.toLowerCase())
    return refuse('invalid_asset', 'The payment is not in the USDC we offered.');
  if (accepted.amount !== offered.amount) return refuse('invalid_amount', `The accepted amount is not ${offered.amount}.`);
  if (typeof accepted.payTo !== 'string' || accepted.payTo.toLowerCase() !== offered.payTo.toLowerCase())
    return refuse('invalid_recipient', 'The accepted payee is not our treasury.');
  const extra = accepted.extra;
  if (
    accepted.maxTimeoutSeconds !== offered.maxTimeoutSeconds ||
    !isObject(extra) ||
    extra.name !== offered.extra.name ||
    extra.version !== offered.extra.version
  )
    return refuse('requirements_mismatch', 'The accepted requirements are not the ones we offered.');

  const inner = payload.payload;
  if (!isObject(inner) || !isObject(inner.authorization) || typeof inner.signature !== 'string')
    return refuse('invalid_payload', 'The payment payload has no EIP-3009 authorization and signature.');
  const a = inner.authorization;
  if (
    typeof a.from !== 'string' ||
    !ADDRESS.test(a.from) ||
    typeof a.to !== 'string' ||
    !ADDRESS.test(a.to) ||
    !isUint(a.value) ||
    !isUint(a.validAfter) ||
    !isUint(a.validBefore) ||
    typeof a.nonce !== 'string' ||
    !NONCE.test(a.nonce)
  )
    return refuse('invalid_payload', 'The authorization is malformed.');
  if (!SIGNATURE.test(inner.signature)) return refuse('invalid_signature', 'The signature is not 65 bytes of hex.');
  const authorization: Eip3009Authorization = {
    from: a.from.toLowerCase() as Hex,
    to: a.to.toLowerCase() as Hex,
    value: BigInt(a.value as string),
    validAfter: BigInt(a.validAfter as string),
    validBefore: BigInt(a.validBefore as string),
    nonce: a.nonce.toLowerCase() as Hex,
  };
  if (authorization.to !== offered.payTo.toLowerCase()) return refuse('invalid_recipient', 'The authorization does not pay our treasury.');
  if (authorization.value !== BigInt(offered.amount))
    return refuse('invalid_amount', `The authorization's value is not ${offered.amount}.`);
  if (authorization.validAfter > nowS) return refuse('authorization_not_yet_valid', 'The authorization is not valid yet.');
  if (nowS >= authorization.validBefore - VALID_BEFORE_MARGIN_S)
    return refuse('authorization_expired', 'The authorization has expired or expires within seconds.');
  const latestValidBeforeS = nowS + BigInt(offered.maxTimeoutSeconds) + VALID_BEFORE_SKEW_S;
  if (authorization.validBefore > latestValidBeforeS)
    return refuse(
      'authorization_valid_too_long',
      `The authorization's validBefore is more than maxTimeoutSeconds (${offered.maxTimeoutSeconds} s) from now; sign one valid at most that long.`,
    );
  return { ok: true, authorization, signature: inner.signature.toLowerCase() as Hex };
}

/** The facts about a stored intent on chain, as the settlement worker read them. */
export interface SettlementFacts {
  /** Our transaction's receipt: null while unmined (or not known to the node). */
  receipt: { success: boolean; blockNumber: bigint; blockHash: Hex; transferLogIndex: number | null } | null;
  /** Whether the authorization's nonce is used (or cancelled) on chain now. */
  authorizationUsed: boolean;
  /** The latest block's time (unix seconds). */
  chainTimeS: bigint;
}

export type SettlementStep =
  | { action: 'wait' }
  | { action: 'mined'; blockNumber: bigint; blockHash: Hex; logIndex: number }
  | { action: 'resend' }
  | { action: 'exception'; reason: 'authorization_expired_unmined' | 'authorization_used_elsewhere' | 'settlement_reverted' };

/**
 * What a SETTLING intent becomes. Mined with our Transfer log: PENDING_FINALITY. Reverted, or unmined while the
 * nonce is used: someone else's transaction used (or cancelled) the authorization. Unmined past validBefore: it can
 * never be mined. Unmined otherwise: re-send the same signed bytes (never a new transaction).
 */
export function nextSettlementStep(facts: SettlementFacts, validBefore: bigint): SettlementStep {
  const r = facts.receipt;
  if (r) {
    if (r.success && r.transferLogIndex !== null)
      return { action: 'mined', blockNumber: r.blockNumber, blockHash: r.blockHash, logIndex: r.transferLogIndex };
    return { action: 'exception', reason: facts.authorizationUsed ? 'authorization_used_elsewhere' : 'settlement_reverted' };
  }
  if (facts.authorizationUsed) return { action: 'exception', reason: 'authorization_used_elsewhere' };
  if (facts.chainTimeS >= validBefore) return { action: 'exception', reason: 'authorization_expired_unmined' };
  return { action: 'resend' };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function isUint(v: unknown): boolean {
  return typeof v === 'string' && UINT.test(v) && BigInt(v) < 2n ** 256n;
}
