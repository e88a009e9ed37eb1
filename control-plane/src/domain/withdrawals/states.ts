import type { Role, Scope } from '../accounts/principal.js';
import { assertMove, ForbiddenStateMove, type MoveTable } from '../moves.js';

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

/**
 * The moves of an account's request (a withdrawal or a payout), written by services/withdrawals/ only:
 *
 *   INTENT    -> UNSIGNED    the payer's checks hold it for review (payer.ts)
 *   INTENT    -> SIGNED      nonce pinned and the signed transfer stored (payer.ts)
 *   INTENT    -> INTENT      approved before the payer held it: the review is recorded, nothing moves (review.ts)
 *   INTENT    -> FAILED      rejected before the payer held it (review.ts)
 *   UNSIGNED  -> INTENT      approved: the payer checks it again (review.ts)
 *   UNSIGNED  -> FAILED      rejected: the lock goes back (review.ts)
 *   SIGNED    -> BROADCAST   sent (payer.ts)
 *   BROADCAST -> BROADCAST   stuck: replaced at the same nonce with a higher fee (payer.ts)
 *   BROADCAST -> CONFIRMED   its block is final: the lock leaves for `external` (payer.ts)
 *   BROADCAST -> FAILED      reverted on chain: the lock goes back (payer.ts)
 *
 * CONFIRMED and FAILED are final. Nothing goes back once a nonce is pinned: no review after SIGNED.
 */
const REQUEST_MOVES: MoveTable<WithdrawalState> = {
  INTENT: ['INTENT', 'UNSIGNED', 'SIGNED', 'FAILED'],
  UNSIGNED: ['INTENT', 'FAILED'],
  SIGNED: ['BROADCAST'],
  BROADCAST: ['BROADCAST', 'CONFIRMED', 'FAILED'],
  CONFIRMED: [],
  FAILED: [],
};

/**
 * A refund is the operator's decision, never held nor reviewed: INTENT -> SIGNED -> BROADCAST -> CONFIRMED (its deposit
 * REFUNDED) or FAILED (its deposit HELD again), with replacements at BROADCAST as any payment.
 */
const REFUND_MOVES: MoveTable<WithdrawalState> = {
  INTENT: ['SIGNED'],
  UNSIGNED: [],
  SIGNED: ['BROADCAST'],
  BROADCAST: ['BROADCAST', 'CONFIRMED', 'FAILED'],
  CONFIRMED: [],
  FAILED: [],
};

/** The allowed state moves of each kind of paid request; `moveWithdrawal` (store/withdrawals.ts) checks every write. */
export const WITHDRAWAL_MOVES: Readonly<Record<PaidKind, MoveTable<WithdrawalState>>> = {
  withdrawal: REQUEST_MOVES,
  payout: REQUEST_MOVES,
  refund: REFUND_MOVES,
};

/** Every request, of any kind, is stored first as INTENT (the payer decides whether it is held). */
export const WITHDRAWAL_INITIAL_STATES: readonly WithdrawalState[] = ['INTENT'];

/** Throws ForbiddenStateMove unless a request of `kind` may move `from -> to`. */
export function assertWithdrawalMove(kind: PaidKind, from: WithdrawalState, to: WithdrawalState): void {
  assertMove(kind, WITHDRAWAL_MOVES[kind], from, to);
}

/** Throws ForbiddenStateMove unless a new request may be stored in `state`. */
export function assertWithdrawalStart(kind: PaidKind, state: WithdrawalState): void {
  if (!WITHDRAWAL_INITIAL_STATES.includes(state)) throw new ForbiddenStateMove(kind, '(new)', state);
}

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
