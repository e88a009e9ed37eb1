import { assertMove, type MoveTable } from '../moves.js';

// Deposit states and the decisions taken when a deposit's block becomes final, when room appears under the balance
// cap, and when an operator credits or refunds a held deposit. Pure: values in, decision out.

/**
 * SEEN: on chain, not final yet (display only). CREDITED: posted to the ledger, exactly once. HELD: final, but over
 * the account's balance cap (or admission is paused); credited once there is room, or by an operator's override.
 * BELOW_MINIMUM: final, under the minimum deposit; waits until the account's small deposits add up to the minimum.
 * REFUNDING: an operator sends it back to its sender through the payout path; REFUNDED: that transfer is final.
 */
export const DEPOSIT_STATES = ['SEEN', 'CREDITED', 'HELD', 'BELOW_MINIMUM', 'REFUNDING', 'REFUNDED'] as const;
export type DepositState = (typeof DEPOSIT_STATES)[number];

/**
 * The allowed state moves of a deposit; the store's deposit writes (store/deposits.ts) check every one:
 *
 *   SEEN          -> CREDITED, HELD, BELOW_MINIMUM   its block is final: decideFinalDeposit (services/billing/deposit-credit.ts)
 *   BELOW_MINIMUM -> CREDITED, HELD                  the account's small deposits reached the minimum together
 *   HELD          -> CREDITED                        room under the cap, or an operator's override (deposit-override.ts)
 *   HELD          -> REFUNDING                       an operator sends it back to its sender (deposit-refund.ts)
 *   REFUNDING     -> REFUNDED                        the refund's transfer is final (services/withdrawals/unlock.ts)
 *   REFUNDING     -> HELD                            the refund failed: held again, for an operator or for room
 *
 * Every deposit is stored first as SEEN; a SEEN deposit whose block a reorg dropped is deleted, not moved. CREDITED
 * and REFUNDED are final: the money is in the ledger, or back with its sender.
 */
export const DEPOSIT_MOVES: MoveTable<DepositState> = {
  SEEN: ['CREDITED', 'HELD', 'BELOW_MINIMUM'],
  BELOW_MINIMUM: ['CREDITED', 'HELD'],
  HELD: ['CREDITED', 'REFUNDING'],
  REFUNDING: ['REFUNDED', 'HELD'],
  CREDITED: [],
  REFUNDED: [],
};

/** Throws ForbiddenStateMove unless a deposit may move `from -> to`. */
export function assertDepositMove(from: DepositState, to: DepositState): void {
  assertMove('deposit', DEPOSIT_MOVES, from, to);
}

/** Why a deposit is HELD (or was not credited): the `reason` column. */
export const HOLD_REASON = {
  /** Not enough room under the cap now; credited automatically once there is. */
  balanceCap: 'balance_cap',
  /** Bigger than the cap itself (or than one posting may move): there is never room; an operator decides. */
  exceedsBalanceCap: 'exceeds_balance_cap',
  admissionsPaused: 'admissions_paused',
  /** A refund failed on chain or was rejected: the deposit is held again, for an operator or for room. */
  refundFailed: 'refund_failed',
  belowMinimum: 'below_minimum',
} as const;

/** The reason an operator's override credit leaves on the row (the audit log keeps who and why). */
export const OVERRIDE_REASON = 'operator_override';

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

/**
 * The exactly-once key of whatever moves a deposit's money into the ledger next: a credit or a refund's lock. A
 * refund that failed already spent the chain key (its lock was posted under it and returned), so what comes after it
 * is keyed by that refund: still one key per decision, and the deposit's state lets only one decision through.
 */
export function depositMoneyRef(chainRef: string, failedRefundId: string | null): string {
  return failedRefundId === null ? chainRef : `${chainRef}:after-refund:${failedRefundId}`;
}

export interface FinalDepositFacts {
  /** The deposit's value in micro-USD (priced for a native coin). */
  amountMicro: bigint;
  minDepositMicro: bigint;
  /** The sum of the account's BELOW_MINIMUM deposits (this one aside). */
  belowMinimumMicro: bigint;
  /** The account's balance cap on its available balance; null: no cap. */
  balanceCapMicro: bigint | null;
  /** The account's available balance now (locked by the caller), after older held deposits that fit were credited. */
  availableMicro: bigint;
  /** The most one ledger posting may move. */
  maxCreditMicro: bigint;
}

export type FinalDepositDecision =
  /** `joinBelowMinimum`: the account's BELOW_MINIMUM deposits are credited with it. */
  | { action: 'credit'; joinBelowMinimum: boolean }
  /** `joinBelowMinimum`: they reached the minimum with this one, and are held with it. */
  | { action: 'hold'; reason: typeof HOLD_REASON.balanceCap | typeof HOLD_REASON.exceedsBalanceCap; joinBelowMinimum: boolean }
  | { action: 'below_minimum' };

/**
 * What a final deposit becomes. The cap bounds the available balance (money a renter keeps with us unspent); money
 * held by running jobs is already committed and does not count. A deposit is credited whole or held whole, and is
 * decided on its own: an older deposit that does not fit never holds it back. Deposits under the minimum wait until
 * the account's small deposits add up to it; they are then decided as one deposit of their sum.
 */
export function decideFinalDeposit(f: FinalDepositFacts): FinalDepositDecision {
  if (f.amountMicro <= 0n) return { action: 'below_minimum' };
  const fits = (amount: bigint) => heldDepositFits(amount, f.availableMicro, f.balanceCapMicro, f.maxCreditMicro);
  if (f.amountMicro < f.minDepositMicro) {
    const total = f.amountMicro + f.belowMinimumMicro;
    if (total < f.minDepositMicro) return { action: 'below_minimum' };
    // Each row is posted apart, so only the room under the cap matters, not the size of one posting.
    return fits(total)
      ? { action: 'credit', joinBelowMinimum: true }
      : { action: 'hold', reason: HOLD_REASON.balanceCap, joinBelowMinimum: true };
  }
  if (exceedsBalanceCap(f.amountMicro, f.balanceCapMicro, f.maxCreditMicro)) {
    return { action: 'hold', reason: HOLD_REASON.exceedsBalanceCap, joinBelowMinimum: false };
  }
  if (!fits(f.amountMicro)) return { action: 'hold', reason: HOLD_REASON.balanceCap, joinBelowMinimum: false };
  return { action: 'credit', joinBelowMinimum: f.belowMinimumMicro > 0n && fits(f.amountMicro + f.belowMinimumMicro) };
}

/** Whether a HELD deposit fits now. */
export function heldDepositFits(
  amountMicro: bigint,
  availableMicro: bigint,
  balanceCapMicro: bigint | null,
  maxCreditMicro: bigint,
): boolean {
  if (amountMicro > maxCreditMicro) return false;
  return balanceCapMicro === null || availableMicro + amountMicro <= balanceCapMicro;
}

/** A deposit bigger than the cap itself (or than one posting): no room ever appears for it; an operator decides. */
export function exceedsBalanceCap(amountMicro: bigint, balanceCapMicro: bigint | null, maxCreditMicro: bigint): boolean {
  return amountMicro > maxCreditMicro || (balanceCapMicro !== null && amountMicro > balanceCapMicro);
}

/**
 * The largest HELD deposit automatic release should look at: anything bigger can never fit, and is left to an
 * operator instead of filling every release batch.
 */
export function largestReleasable(balanceCapMicro: bigint | null, maxCreditMicro: bigint): bigint {
  return balanceCapMicro !== null && balanceCapMicro < maxCreditMicro ? balanceCapMicro : maxCreditMicro;
}

/** Room left under the cap for the deposit-address view; null means no limit. Never negative. */
export function roomUnderCap(availableMicro: bigint, balanceCapMicro: bigint | null): bigint | null {
  if (balanceCapMicro === null) return null;
  return availableMicro >= balanceCapMicro ? 0n : balanceCapMicro - availableMicro;
}

export interface RefundFacts {
  state: DepositState;
  /** The transfer's sender as the watcher recorded it; null for a deposit seen before senders were recorded. */
  fromAddress: string | null;
  chainId: number;
  /** The token contract; null for a native coin. */
  tokenAddress: string | null;
  amountMicro: bigint | null;
}

/** Where refunds are paid: the payout rail's network and its USDC. */
export interface RefundRail {
  chainId: number;
  usdcAddress: string;
}

export type RefundRefusal = 'not_held' | 'sender_unknown' | 'no_payout_rail' | 'asset_not_refundable' | 'no_amount';

/**
 * Whether a deposit can go back to its sender through the payout path. The payout wallet pays the primary network's
 * USDC only, so a refund returns exactly what came: USDC on that network, to the address that sent it. Anything else
 * (another network, another asset, a native coin) is never converted on the way back; an operator credits it instead.
 */
export function refundRefusal(f: RefundFacts, rail: RefundRail | null): RefundRefusal | null {
  if (f.state !== 'HELD') return 'not_held';
  if (rail === null) return 'no_payout_rail';
  if (f.tokenAddress === null || f.chainId !== rail.chainId || f.tokenAddress.toLowerCase() !== rail.usdcAddress.toLowerCase()) {
    return 'asset_not_refundable';
  }
  // A mint straight to the deposit address has no sender to return it to.
  if (f.fromAddress === null || /^0x0{40}$/i.test(f.fromAddress)) return 'sender_unknown';
  if (f.amountMicro === null || f.amountMicro <= 0n) return 'no_amount';
  return null;
}
