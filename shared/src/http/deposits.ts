import { type Static, Type } from '@sinclair/typebox';
import { DecimalString, EvmAddress, MicroAmount, MicroTotal, Nullable, Rfc3339Utc, Uuid } from '../formats.js';
import { PageQuery } from './common.js';
import { WithdrawalState } from './withdrawals.js';

/**
 * SEEN: waiting for finality (display only). CREDITED: credited once. HELD: over the balance cap, credited once there
 * is room (or by an operator's override). BELOW_MINIMUM: under the minimum, credited once the address's small deposits
 * add up to it. REFUNDING: an operator sends it back to its sender; REFUNDED: that transfer is final.
 */
export const DepositState = Type.Union([
  Type.Literal('SEEN'),
  Type.Literal('CREDITED'),
  Type.Literal('HELD'),
  Type.Literal('BELOW_MINIMUM'),
  Type.Literal('REFUNDING'),
  Type.Literal('REFUNDED'),
]);
export type DepositState = Static<typeof DepositState>;

/** One transfer to an account's deposit address. */
export const Deposit = Type.Object(
  {
    deposit_id: Uuid,
    state: DepositState,
    network: Type.String(),
    chain_id: Type.Integer({ minimum: 1 }),
    /** USDC, USDT, ETH... */
    asset: Type.String(),
    /** The token contract; null for the network's native coin. */
    token_address: Nullable(EvmAddress),
    tx_hash: Type.String({ pattern: '^0x[0-9a-f]{64}$' }),
    /** The Transfer log's index; -1 for a plain native transfer. */
    log_index: Type.Integer({ minimum: -1 }),
    block_number: DecimalString,
    /** In the asset's smallest unit (`decimals` of them make one coin). */
    amount: DecimalString,
    decimals: Type.Integer({ minimum: 0 }),
    /** The deposit's value in micro-USD: stablecoins 1:1; a native coin once priced at finality (null before). */
    amount_micro: Nullable(MicroTotal),
    /** What the balance received; null until CREDITED. */
    credited_micro: Nullable(MicroTotal),
    /**
     * Why it is not credited (yet): below_minimum, balance_cap, exceeds_balance_cap (bigger than the cap: an operator
     * credits or refunds it), admissions_paused, refund_failed, price_stale, price_not_positive; operator_override on a
     * deposit an operator credited over the cap.
     */
    reason: Nullable(Type.String()),
    seen_at: Rfc3339Utc,
    credited_at: Nullable(Rfc3339Utc),
  },
  { additionalProperties: false },
);
export type Deposit = Static<typeof Deposit>;

export const DepositAsset = Type.Object(
  {
    network: Type.String(),
    chain_id: Type.Integer({ minimum: 1 }),
    symbol: Type.String(),
    kind: Type.Union([Type.Literal('token'), Type.Literal('native')]),
    /** The token contract; null for the native coin. */
    address: Nullable(EvmAddress),
    decimals: Type.Integer({ minimum: 0 }),
    /** Native coins only: taken off the oracle price when crediting. */
    spread_bps: Type.Optional(Type.Integer({ minimum: 0, maximum: 9999 })),
  },
  { additionalProperties: false },
);
export type DepositAsset = Static<typeof DepositAsset>;

export const DepositNetwork = Type.Object(
  {
    name: Type.String(),
    chain_id: Type.Integer({ minimum: 1 }),
    assets: Type.Array(DepositAsset),
    native: Nullable(
      Type.Object(
        { symbol: Type.String(), decimals: Type.Integer({ minimum: 0 }), spread_bps: Type.Integer({ minimum: 0, maximum: 9999 }) },
        { additionalProperties: false },
      ),
    ),
    finalized_block_number: Nullable(DecimalString),
  },
  { additionalProperties: false },
);
export type DepositNetwork = Static<typeof DepositNetwork>;

/** `GET /api/v1/billing/deposit-address` (contract part 2, Deposit address). */
export const DepositAddress = Type.Object(
  {
    chain_id: Type.Literal(8453),
    network: Type.Literal('base'),
    /** The same on every listed network; created on first call; never changes. */
    address: EvmAddress,
    /** Every network watched now, the primary one first. */
    networks: Type.Array(DepositNetwork),
    assets: Type.Array(DepositAsset),
    min_deposit_micro: MicroAmount,
    /** Room left under the balance cap; null: no limit. */
    max_deposit_micro: Nullable(MicroTotal),
    finalized_block_number: Nullable(DecimalString),
    /** Recent deposits, newest first. */
    deposits: Type.Array(Deposit),
  },
  { additionalProperties: false },
);
export type DepositAddress = Static<typeof DepositAddress>;

/** The balance view's query: `cursor` pages its `deposits`, `top_ups_cursor` its x402 `top_ups`; `limit` sizes both. */
export const BillingBalanceQuery = Type.Object(
  { ...PageQuery.properties, top_ups_cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })) },
  { additionalProperties: false },
);
export type BillingBalanceQuery = Static<typeof BillingBalanceQuery>;

export const DepositPage = Type.Object(
  { items: Type.Array(Deposit), next_cursor: Nullable(Type.String()) },
  { additionalProperties: false },
);
export type DepositPage = Static<typeof DepositPage>;

/** The deposit states an operator's list shows (`GET /api/v1/admin/deposits?state=`; HELD when absent). */
export const OperatorDepositState = Type.Union([
  Type.Literal('HELD'),
  Type.Literal('BELOW_MINIMUM'),
  Type.Literal('REFUNDING'),
  Type.Literal('REFUNDED'),
]);
export type OperatorDepositState = Static<typeof OperatorDepositState>;

export const AdminDepositsQuery = Type.Composite([PageQuery, Type.Object({ state: Type.Optional(OperatorDepositState) })], {
  additionalProperties: false,
});
export type AdminDepositsQuery = Static<typeof AdminDepositsQuery>;

/** A deposit as an operator sees it: whose, from whom, and what can be done with it. */
export const AdminDeposit = Type.Composite(
  [
    Deposit,
    Type.Object({
      account_id: Uuid,
      /** The transfer's sender; null for a deposit seen before senders were recorded (it cannot be refunded). */
      from_address: Nullable(EvmAddress),
      /** Bigger than the balance cap itself: room never appears, so it waits for an operator to credit or refund it. */
      needs_operator: Type.Boolean(),
      /** Why it cannot be refunded now (not_held, sender_unknown, asset_not_refundable, no_payout_rail); null: it can. */
      refund_refusal: Nullable(Type.String()),
      /** The refund that returns it (or the last that failed), on the payout path. */
      refund: Nullable(
        Type.Object(
          {
            id: Uuid,
            state: WithdrawalState,
            tx_hash: Nullable(Type.String({ pattern: '^0x[0-9a-f]{64}$' })),
          },
          { additionalProperties: false },
        ),
      ),
      /** The admin who credited it by override or refunded it, why and when. */
      resolved_by: Nullable(Uuid),
      resolution_reason: Nullable(Type.String()),
      resolved_at: Nullable(Rfc3339Utc),
    }),
  ],
  { additionalProperties: false },
);
export type AdminDeposit = Static<typeof AdminDeposit>;

/** `POST /api/v1/admin/deposits/{id}/credit` and `/refund`: the operator's reason, audited. */
export const DepositResolutionRequest = Type.Object(
  { reason: Type.String({ minLength: 5, maxLength: 2000 }) },
  { additionalProperties: false },
);
export type DepositResolutionRequest = Static<typeof DepositResolutionRequest>;

export const DepositResolution = Type.Object(
  {
    deposit_id: Uuid,
    action: Type.Union([Type.Literal('credit'), Type.Literal('refund')]),
    /** CREDITED after a credit; REFUNDING (then REFUNDED once paid) after a refund. */
    state: DepositState,
    amount_micro: MicroTotal,
    /** The refund on the payout path (null for a credit), and where it pays. */
    refund_id: Nullable(Uuid),
    refund_to: Nullable(EvmAddress),
    /** True when the deposit had already ended this way (a repeat changes nothing). */
    already: Type.Boolean(),
  },
  { additionalProperties: false },
);
export type DepositResolution = Static<typeof DepositResolution>;
