import type { HoldReason } from './states.js';

// The automatic path's decision for one request. Pure: the service loads the facts and the clock reading.

export interface HoldPolicy {
  /** Above this amount a request waits for an admin. */
  reviewAboveMicro: bigint;
  /** An address added (or changed) more recently than this is held. */
  newAddressHoldMs: number;
  /** The most one account may request in 24 h without review (this request included). */
  dailyLimitMicro: bigint;
  /** Hold an account's first withdrawal or payout. */
  reviewFirst: boolean;
}

export interface HoldFacts {
  amountMicro: bigint;
  /** The address as it is now; null when it was removed. */
  address: { version: bigint; createdAt: Date } | null;
  /** The version the request was made against. */
  requestedVersion: bigint;
  /** Requested by the account in the last 24 h, not FAILED, this request included. */
  lastDayMicro: bigint;
  /** The account has a CONFIRMED withdrawal or payout already. */
  paidBefore: boolean;
  /** An admin approved this request: the holds are skipped, the correctness checks are not. */
  approved: boolean;
  now: Date;
}

/**
 * The reasons to hold a request unsigned, none when it may be paid now. A changed or removed address is a
 * correctness failure, not a hold: approval does not lift it, so a request to an old version is never paid.
 */
export function holdReasons(policy: HoldPolicy, facts: HoldFacts): HoldReason[] {
  if (facts.address === null || facts.address.version !== facts.requestedVersion) return ['address_changed'];
  if (facts.approved) return [];
  const reasons: HoldReason[] = [];
  if (facts.amountMicro > policy.reviewAboveMicro) reasons.push('amount_over_review_threshold');
  if (facts.now.getTime() - facts.address.createdAt.getTime() < policy.newAddressHoldMs) reasons.push('address_new');
  if (facts.lastDayMicro > policy.dailyLimitMicro) reasons.push('daily_limit');
  if (policy.reviewFirst && !facts.paidBefore) reasons.push('first_withdrawal');
  return reasons;
}

/**
 * Fees of a replacement at the same nonce: at least 12.5 % above the stuck one on both fields (nodes refuse less),
 * and never below what the network asks now.
 */
export function replacementFees(
  stuck: { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint },
  network: { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint },
): { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint } {
  const bump = (x: bigint) => x + x / 4n + 1n;
  const max = (a: bigint, b: bigint) => (a > b ? a : b);
  const priority = max(bump(stuck.maxPriorityFeePerGas), network.maxPriorityFeePerGas);
  return { maxPriorityFeePerGas: priority, maxFeePerGas: max(max(bump(stuck.maxFeePerGas), network.maxFeePerGas), priority) };
}
