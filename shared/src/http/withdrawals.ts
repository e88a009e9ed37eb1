import { type Static, Type } from '@sinclair/typebox';
import { DecimalString, EvmAddress, MicroAmount, MicroTotal, Nullable, Rfc3339Utc, Uuid } from '../formats.js';
import { JobCreditLine } from './credits.js';
import { PageQuery } from './common.js';

// Money out (issue 12; contract parts 3 and 4): withdrawal and payout requests, the admin's review, a host's earnings.

/**
 * INTENT: requested or approved, the automatic checks run next. UNSIGNED: held for review. SIGNED: nonce pinned, the
 * signed transfer stored. BROADCAST: sent. CONFIRMED: final on chain. FAILED: rejected or refused; the lock returned.
 */
export const WithdrawalState = Type.Union([
  Type.Literal('INTENT'),
  Type.Literal('UNSIGNED'),
  Type.Literal('SIGNED'),
  Type.Literal('BROADCAST'),
  Type.Literal('CONFIRMED'),
  Type.Literal('FAILED'),
]);
export type WithdrawalState = Static<typeof WithdrawalState>;

export const WithdrawalKind = Type.Union([Type.Literal('withdrawal'), Type.Literal('payout')]);
export type WithdrawalKind = Static<typeof WithdrawalKind>;

/** Which balance a request draws: `available` (deposits, top-ups, refunds) or `payable` (matured host earnings). */
export const WithdrawalBalance = Type.Union([Type.Literal('available'), Type.Literal('payable')], {
  description:
    'The balance to draw: available leaves as a withdrawal (renter scope), payable as a payout (host scope). Any account may hold ' +
    'both. Omitted (older clients): payable for a host-role account, available for any other.',
});
export type WithdrawalBalance = Static<typeof WithdrawalBalance>;

export const WithdrawalCreateRequest = Type.Object(
  {
    balance: Type.Optional(WithdrawalBalance),
    amount_micro: MicroAmount,
    withdrawal_address_id: Uuid,
    network: Type.Optional(Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,31}$' })),
  },
  { additionalProperties: false },
);
export type WithdrawalCreateRequest = Static<typeof WithdrawalCreateRequest>;

export const Withdrawal = Type.Object(
  {
    id: Uuid,
    /** withdrawal: from the available balance; payout: from payable earnings (the request's `balance`). */
    kind: WithdrawalKind,
    state: WithdrawalState,
    amount_micro: MicroAmount,
    /** What the account pays on top of the amount: nothing (the platform pays the network fee). */
    fee_micro: MicroTotal,
    network: Type.String(),
    chain_id: Type.Integer({ minimum: 1 }),
    asset: Type.Literal('USDC'),
    withdrawal_address_id: Uuid,
    address: EvmAddress,
    /** The address version the request was made against; a request to an older version is never paid automatically. */
    address_version: DecimalString,
    /** Why it waits for review while UNSIGNED: amount_over_review_threshold, address_new, daily_limit, first_withdrawal, address_changed. */
    hold_reasons: Type.Array(Type.String()),
    /** The transaction that paid (or is paying) it; null before signing. */
    tx_hash: Nullable(Type.String({ pattern: '^0x[0-9a-f]{64}$' })),
    nonce: Nullable(DecimalString),
    block_number: Nullable(DecimalString),
    /** Why it failed: rejected, reverted_on_chain. */
    failure_reason: Nullable(Type.String()),
    created_at: Rfc3339Utc,
    updated_at: Rfc3339Utc,
    confirmed_at: Nullable(Rfc3339Utc),
  },
  { additionalProperties: false },
);
export type Withdrawal = Static<typeof Withdrawal>;

export const WithdrawalReviewRequest = Type.Object(
  {
    decision: Type.Union([Type.Literal('approve'), Type.Literal('reject')]),
    reason: Type.String({ minLength: 5, maxLength: 2000 }),
  },
  { additionalProperties: false },
);
export type WithdrawalReviewRequest = Static<typeof WithdrawalReviewRequest>;

export const WithdrawalReviewResult = Type.Object(
  {
    id: Uuid,
    kind: WithdrawalKind,
    decision: Type.Union([Type.Literal('approve'), Type.Literal('reject')]),
    state: Type.Union([Type.Literal('INTENT'), Type.Literal('FAILED')]),
  },
  { additionalProperties: false },
);
export type WithdrawalReviewResult = Static<typeof WithdrawalReviewResult>;

export const AdminWithdrawalsQuery = Type.Composite([PageQuery, Type.Object({ state: Type.Optional(WithdrawalState) })], {
  additionalProperties: false,
});
export type AdminWithdrawalsQuery = Static<typeof AdminWithdrawalsQuery>;

export const AdminWithdrawal = Type.Composite([Withdrawal, Type.Object({ account_id: Uuid, review_reason: Nullable(Type.String()) })], {
  additionalProperties: false,
});
export type AdminWithdrawal = Static<typeof AdminWithdrawal>;

/** One line of a host's history: a job's metered earnings so far, or a payout. */
export const EarningsItem = Type.Union([
  Type.Object({ kind: Type.Literal('job'), job_id: Uuid, earned_micro: MicroTotal, at: Rfc3339Utc }, { additionalProperties: false }),
  Type.Object(
    { kind: Type.Literal('payout'), withdrawal_id: Uuid, amount_micro: MicroAmount, state: WithdrawalState, at: Rfc3339Utc },
    { additionalProperties: false },
  ),
]);
export type EarningsItem = Static<typeof EarningsItem>;

export const HostEarnings = Type.Object(
  {
    /** Charged and not matured yet (issue 24): becomes payable ARK_EARNINGS_MATURITY_S after each charge. */
    pending_micro: MicroTotal,
    /** When the next pending amount becomes payable; null when nothing is pending. */
    next_matures_at: Nullable(Rfc3339Utc),
    /** Matured and not yet requested: what a payout may draw. */
    payable_micro: MicroTotal,
    /** In payouts not final yet. */
    locked_micro: MicroTotal,
    /** Paid out, final on chain. */
    paid_out_micro: MicroTotal,
    items: Type.Array(EarningsItem),
    next_cursor: Nullable(Type.String()),
    /** Automatic credits taken from these earnings for jobs that failed on the host's machines, newest first (at most `limit`). */
    credits: Type.Array(JobCreditLine),
  },
  { additionalProperties: false },
);
export type HostEarnings = Static<typeof HostEarnings>;
