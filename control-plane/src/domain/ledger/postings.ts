import { MICRO_AMOUNT_MAX } from '@ark/shared/limits';
import { type LedgerAccountKind, type LedgerAccountRef, mayGoNegative } from './accounts.js';

/**
 * What a posting is for, and the only account kinds it may move money between.
 * Extend this table (additively) when a new money flow appears; a transfer outside it is a bug.
 */
export const POSTING_RULES = {
  /** A top-up from the world: chain deposit or x402. */
  deposit: { from: ['external'], to: ['available'] },
  /** The quote's budget moves into the job's hold at reservation. */
  reservation: { from: ['available'], to: ['hold'] },
  /** A budget extension adds to the job's hold. */
  extension: { from: ['available'], to: ['hold'] },
  /**
   * The machine-rate share of a metered charge: to the host's pending earnings (issue 24), or straight to payable
   * when maturity is off (ARK_EARNINGS_MATURITY_S=0) and for charges posted before maturity existed.
   */
  charge_host: { from: ['hold'], to: ['pending', 'payable'] },
  /** Pending earnings that reached their maturity become payable (workers/earnings.ts), once per lot. */
  earnings_matured: { from: ['pending'], to: ['payable'] },
  /**
   * An automatic credit to a renter whose job failed through the host (issue 24 item 3): from the host's pending
   * earnings first, then its payable, the rest from the platform's adjustment account; the fee share from fees.
   */
  job_credit: { from: ['pending', 'payable', 'adjustment', 'fees'], to: ['available'] },
  /** The platform-fee share of a metered charge. */
  charge_fee: { from: ['hold'], to: ['fees'] },
  /** The unspent hold returns to the renter when the job closes. */
  release: { from: ['hold'], to: ['available'] },
  /** An audited operator correction, in either direction. */
  adjustment: { from: ['adjustment', 'available', 'payable'], to: ['adjustment', 'available', 'payable'] },
  /** A renter's withdrawal request locks its amount until it is paid or fails. */
  withdrawal_lock: { from: ['available'], to: ['lock'] },
  /** A host's payout request locks its amount until it is paid or fails. */
  payout_lock: { from: ['payable'], to: ['lock'] },
  /** A withdrawal that failed (rejected, or refused on chain) gives its lock back. */
  withdrawal_unlock: { from: ['lock'], to: ['available'] },
  /** A payout that failed gives its lock back. */
  payout_unlock: { from: ['lock'], to: ['payable'] },
  /** A renter's withdrawal leaves for the world (from its lock once the transfer is final on chain). */
  withdrawal: { from: ['available', 'lock'], to: ['external'] },
  /** A failed withdrawal comes back. */
  withdrawal_reversal: { from: ['external'], to: ['available'] },
  /** A host's earnings leave for the world. */
  payout: { from: ['payable', 'lock'], to: ['external'] },
  /** A failed payout comes back. */
  payout_reversal: { from: ['external'], to: ['payable'] },
  /** A HELD deposit an operator refunds: its value enters the ledger straight into the refund's lock, never available. */
  refund_lock: { from: ['external'], to: ['lock'] },
  /** The refund is paid back to the deposit's sender. */
  refund: { from: ['lock'], to: ['external'] },
  /** A refund that failed: its lock goes back out, and the deposit is HELD again. */
  refund_unlock: { from: ['lock'], to: ['external'] },
} as const satisfies Record<string, { from: readonly LedgerAccountKind[]; to: readonly LedgerAccountKind[] }>;

export type PostingKind = keyof typeof POSTING_RULES;
export const POSTING_KINDS = Object.keys(POSTING_RULES) as PostingKind[];

/**
 * No single posting moves more than a billion USDC: the wire's MicroAmount bound. A larger amount is refused as
 * AMOUNT_TOO_LARGE (the caller's input, never a 500).
 */
export const MAX_TRANSFER_MICRO = MICRO_AMOUNT_MAX;
/**
 * No balance goes past 10^18 micro (a trillion USDC) either way: a credit or debit that would is refused as
 * BALANCE_LIMIT_EXCEEDED. Keeps every cached balance, and sums of a few of them, inside int8 (9.2 * 10^18).
 */
export const LEDGER_BALANCE_MAX_MICRO = 1_000_000_000_000_000_000n;
/** Longest reference and external reference accepted. */
export const MAX_REFERENCE_LENGTH = 300;

export interface TransferShape {
  from: LedgerAccountRef;
  to: LedgerAccountRef;
  amountMicro: bigint;
  kind: PostingKind;
  reference: string;
  externalRef?: string | null;
}

/**
 * Why a transfer is malformed, or null when it is well formed. Malformed transfers are programming
 * errors (callers validate user input first), so the store throws on them rather than answering.
 * An amount past MAX_TRANSFER_MICRO is not malformed but refused (amountTooLarge): it can come from the wire.
 */
export function transferProblem(t: TransferShape): string | null {
  if (typeof t.amountMicro !== 'bigint' || t.amountMicro <= 0n) return 'amount must be a positive bigint';
  const rule = (POSTING_RULES as Record<string, { from: readonly string[]; to: readonly string[] } | undefined>)[t.kind];
  if (!rule) return `unknown posting kind ${t.kind}`;
  if (!rule.from.includes(t.from.kind)) return `a ${t.kind} posting cannot debit a ${t.from.kind} account`;
  if (!rule.to.includes(t.to.kind)) return `a ${t.kind} posting cannot credit a ${t.to.kind} account`;
  if (t.from.kind === t.to.kind && t.from.owner === t.to.owner) return 'from and to are the same account';
  if (t.reference.length === 0 || t.reference.length > MAX_REFERENCE_LENGTH) return 'reference must be 1..300 characters';
  if (t.externalRef != null && (t.externalRef.length === 0 || t.externalRef.length > MAX_REFERENCE_LENGTH)) {
    return 'externalRef must be 1..300 characters';
  }
  return null;
}

/** Is the amount more than one posting may move? */
export function amountTooLarge(amountMicro: bigint): boolean {
  return amountMicro > MAX_TRANSFER_MICRO;
}

/** Do both balances after a transfer stay within LEDGER_BALANCE_MAX_MICRO (either sign)? */
export function balancesWithinLimit(fromBalanceAfterMicro: bigint, toBalanceAfterMicro: bigint): boolean {
  const within = (b: bigint) => b <= LEDGER_BALANCE_MAX_MICRO && b >= -LEDGER_BALANCE_MAX_MICRO;
  return within(fromBalanceAfterMicro) && within(toBalanceAfterMicro);
}

/** Is this debit allowed given the account's current balance? */
export function debitAllowed(kind: LedgerAccountKind, balanceMicro: bigint, amountMicro: bigint): boolean {
  return mayGoNegative(kind) || balanceMicro >= amountMicro;
}
