import { type Static, Type } from '@sinclair/typebox';
import { DecimalString, EvmAddress, MicroAmount, MicroTotal, Nullable, Rfc3339Utc, Uuid } from '../formats.js';
import { PageQuery } from './common.js';

/** SEEN: waiting for finality (display only). CREDITED: credited once. HELD: over the balance cap, credited once there is room. BELOW_MINIMUM: recorded, never credited. */
export const DepositState = Type.Union([
  Type.Literal('SEEN'),
  Type.Literal('CREDITED'),
  Type.Literal('HELD'),
  Type.Literal('BELOW_MINIMUM'),
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
    /** Why it is not credited (yet): below_minimum, balance_cap, older_deposit_held, admissions_paused, price_stale, price_not_positive. */
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
