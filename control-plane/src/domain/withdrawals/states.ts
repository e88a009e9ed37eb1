import type { Role, Scope } from '../accounts/principal.js';

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
/** `withdrawal`: the available balance leaves; `payout`: payable host earnings do. Any account may make both. */
export type WithdrawalKind = (typeof WITHDRAWAL_KINDS)[number];

/**
 * Everything the payer pays: an account's requests, and `refund`, a HELD deposit sent back to its sender by an
 * operator's decision (never requested by the account, never reviewed: the operator's decision is the review).
 */
export const PAID_KINDS = [...WITHDRAWAL_KINDS, 'refund'] as const;
export type PaidKind = (typeof PAID_KINDS)[number];
/** The balance a request draws: an account holds both, whatever role it signed up with (DESIGN: money has a way home). */
export const WITHDRAWAL_BALANCES = ['available', 'payable'] as const;
export type WithdrawalBalance = (typeof WITHDRAWAL_BALANCES)[number];

/** Why the automatic path held a request for review (or, for `address_changed`, will never pay it by itself). */
export const HOLD_REASONS = ['amount_over_review_threshold', 'address_new', 'daily_limit', 'first_withdrawal', 'address_changed'] as const;
export type HoldReason = (typeof HOLD_REASONS)[number];

/** Review is possible only before a nonce is pinned (contract: 409 once it is not unsigned any more). */
export function reviewable(state: WithdrawalState): boolean {
  return state === 'UNSIGNED' || state === 'INTENT';
}

/** States that still hold a nonce-less request's money locked and may still be paid. */
export const OPEN_STATES: readonly WithdrawalState[] = ['INTENT', 'UNSIGNED', 'SIGNED', 'BROADCAST'];

/** The balance names the kind: available leaves as a withdrawal, payable as a payout. */
export function withdrawalKindOf(balance: WithdrawalBalance): WithdrawalKind {
  return balance === 'payable' ? 'payout' : 'withdrawal';
}

/** The key scope each kind needs: a withdrawal spends what a renter key spends, a payout is host business. */
export function scopeForWithdrawal(kind: WithdrawalKind): Scope {
  return kind === 'payout' ? 'host' : 'renter';
}

/**
 * The balance of a request that names none, for clients older than the `balance` field only: by sign-up role, as
 * every request was chosen before (host -> payable, anyone else -> available). New clients name the balance.
 */
export function defaultWithdrawalBalance(role: Role): WithdrawalBalance {
  return role === 'host' ? 'payable' : 'available';
}
