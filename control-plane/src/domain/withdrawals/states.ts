// Withdrawal and payout requests (contract part 3, "Withdrawal review"). Pure: states, holds and fee bumps.
//
// INTENT     requested (or approved): the payer re-runs every correctness check, then pays or holds it
// UNSIGNED   held for review: no nonce, no signature; approve -> INTENT, reject -> FAILED
// SIGNED     nonce pinned and the signed transaction stored, in one store transaction, before any broadcast
// BROADCAST  sent to the network (the same bytes again after a restart; a replacement at the same nonce when stuck)
// CONFIRMED  the transfer's block is final: the lock leaves for `external`
// FAILED     rejected, or refused on chain: the lock goes back where it came from

export const WITHDRAWAL_STATES = ['INTENT', 'UNSIGNED', 'SIGNED', 'BROADCAST', 'CONFIRMED', 'FAILED'] as const;
export type WithdrawalState = (typeof WITHDRAWAL_STATES)[number];

export const WITHDRAWAL_KINDS = ['withdrawal', 'payout'] as const;
/** `withdrawal`: a renter's available balance leaves; `payout`: a host's payable does. */
export type WithdrawalKind = (typeof WITHDRAWAL_KINDS)[number];

/**
 * Everything the payer pays: an account's requests, and `refund`, a HELD deposit sent back to its sender by an
 * operator's decision (never requested by the account, never reviewed: the operator's decision is the review).
 */
export const PAID_KINDS = [...WITHDRAWAL_KINDS, 'refund'] as const;
export type PaidKind = (typeof PAID_KINDS)[number];

/** Why the automatic path held a request for review (or, for `address_changed`, will never pay it by itself). */
export const HOLD_REASONS = ['amount_over_review_threshold', 'address_new', 'daily_limit', 'first_withdrawal', 'address_changed'] as const;
export type HoldReason = (typeof HOLD_REASONS)[number];

/** Review is possible only before a nonce is pinned (contract: 409 once it is not unsigned any more). */
export function reviewable(state: WithdrawalState): boolean {
  return state === 'UNSIGNED' || state === 'INTENT';
}

/** States that still hold a nonce-less request's money locked and may still be paid. */
export const OPEN_STATES: readonly WithdrawalState[] = ['INTENT', 'UNSIGNED', 'SIGNED', 'BROADCAST'];

/** The kind of request an account makes: hosts are paid out of payable, everyone else withdraws from available. */
export function withdrawalKindFor(role: 'renter' | 'host' | 'admin'): WithdrawalKind {
  return role === 'host' ? 'payout' : 'withdrawal';
}
