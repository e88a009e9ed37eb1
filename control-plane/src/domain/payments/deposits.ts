// Deposit states and the decisions taken when a deposit's block becomes final. Pure: values in, decision out.

/**
 * SEEN: on chain, not final yet (display only). CREDITED: posted to the ledger, exactly once. HELD: final, but the
 * account was at its balance cap; credited oldest first once there is room. BELOW_MINIMUM: final, under the
 * minimum deposit; recorded, never credited.
 */
export const DEPOSIT_STATES = ['SEEN', 'CREDITED', 'HELD', 'BELOW_MINIMUM'] as const;
export type DepositState = (typeof DEPOSIT_STATES)[number];

/** A plain native transfer has no log; it takes this log index in the exactly-once key. */
export const NATIVE_LOG_INDEX = -1;

/**
 * The ledger's exactly-once key of a credit from chain: (chain id, tx hash, log index). x402 settlements use the
 * same key for the Transfer log they produce, so a payment seen by both paths posts once.
 */
export function chainCreditRef(chainId: number, txHash: string, logIndex: number): string {
  if (!/^0x[0-9a-f]{64}$/.test(txHash)) throw new RangeError(`a tx hash must be 0x and 64 lower-case hex digits: ${txHash}`);
  if (!Number.isInteger(logIndex) || logIndex < NATIVE_LOG_INDEX) throw new RangeError(`bad log index ${logIndex}`);
  return `chain:${chainId}:${txHash}:${logIndex}`;
}

export interface FinalDepositFacts {
  /** The deposit's value in micro-USD (priced for a native coin). */
  amountMicro: bigint;
  minDepositMicro: bigint;
  /** The account's balance cap on its available balance; null: no cap. */
  balanceCapMicro: bigint | null;
  /** The account's available balance now (locked by the caller). */
  availableMicro: bigint;
  /** Whether an older deposit of the same account is HELD: it goes first, so this one waits behind it. */
  olderHeld: boolean;
  /** The most one ledger posting may move. */
  maxCreditMicro: bigint;
}

export type FinalDepositDecision =
  | { action: 'credit' }
  | { action: 'hold'; reason: 'balance_cap' | 'older_deposit_held' }
  | { action: 'below_minimum' };

/**
 * What a final deposit becomes. The cap bounds the available balance (money a renter keeps with us unspent); money
 * held by running jobs is already committed and does not count. A deposit is credited whole or held whole.
 */
export function decideFinalDeposit(f: FinalDepositFacts): FinalDepositDecision {
  if (f.amountMicro < f.minDepositMicro || f.amountMicro <= 0n) return { action: 'below_minimum' };
  if (f.olderHeld) return { action: 'hold', reason: 'older_deposit_held' };
  if (f.amountMicro > f.maxCreditMicro) return { action: 'hold', reason: 'balance_cap' };
  if (f.balanceCapMicro !== null && f.availableMicro + f.amountMicro > f.balanceCapMicro) return { action: 'hold', reason: 'balance_cap' };
  return { action: 'credit' };
}

/** Whether the oldest HELD deposit of an account fits now. */
export function heldDepositFits(
  amountMicro: bigint,
  availableMicro: bigint,
  balanceCapMicro: bigint | null,
  maxCreditMicro: bigint,
): boolean {
  if (amountMicro > maxCreditMicro) return false;
  return balanceCapMicro === null || availableMicro + amountMicro <= balanceCapMicro;
}

/** Room left under the cap for the deposit-address view; null means no limit. Never negative. */
export function roomUnderCap(availableMicro: bigint, balanceCapMicro: bigint | null): bigint | null {
  if (balanceCapMicro === null) return null;
  return availableMicro >= balanceCapMicro ? 0n : balanceCapMicro - availableMicro;
}
