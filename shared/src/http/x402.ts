import { type Static, Type } from '@sinclair/typebox';
import { DecimalString, MicroAmount, MicroTotal, Nullable, Rfc3339Utc, Uuid } from '../formats.js';

// x402 v2 top-ups (contract parts 2, 3, 4 and 7): `POST /api/v1/billing/x402/top-up?amount_micro=N`.

export const X402TopUpQuery = Type.Object({ amount_micro: MicroAmount }, { additionalProperties: false });
export type X402TopUpQuery = Static<typeof X402TopUpQuery>;

/** The payment-required answer (402), also base64 in the PAYMENT-REQUIRED header. Not the error envelope. */
export const X402PaymentRequired = Type.Object(
  {
    x402Version: Type.Literal(2),
    /** Why: payment_required with no payment, or the refusal (invalid_amount, authorization_expired, ...). */
    error: Type.String({ minLength: 1 }),
    resource: Type.Object({ url: Type.String(), description: Type.String(), mimeType: Type.String() }),
    accepts: Type.Array(
      Type.Object({
        scheme: Type.Literal('exact'),
        network: Type.String(),
        amount: DecimalString,
        asset: Type.String(),
        payTo: Type.String(),
        maxTimeoutSeconds: Type.Integer({ minimum: 1 }),
        extra: Type.Object({ name: Type.String(), version: Type.String() }),
      }),
    ),
  },
  { additionalProperties: false },
);
export type X402PaymentRequired = Static<typeof X402PaymentRequired>;

/** 202 while the settlement transaction is broadcast but not mined: repeat the same request. */
export const X402Settling = Type.Object(
  {
    state: Type.Literal('SETTLING'),
    tx_hash: Type.String(),
    retry: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);
export type X402Settling = Static<typeof X402Settling>;

export const X402TopUpState = Type.Union([Type.Literal('PENDING_FINALITY'), Type.Literal('CONFIRMED'), Type.Literal('EXCEPTION')]);
export type X402TopUpState = Static<typeof X402TopUpState>;

/** The x402 top-up result (200). */
export const X402TopUpResult = Type.Object(
  {
    intent_id: Uuid,
    state: X402TopUpState,
    amount_micro: DecimalString,
    credited_micro: Type.Optional(DecimalString),
    /** EXCEPTION: authorization_cancelled, authorization_expired_unmined, settlement_reverted; or settled_by_another_transaction. */
    reason: Type.Optional(Type.String()),
    /** The wallet that signed the authorization (need not be linked to the account). */
    payer: Type.String(),
    /** The transaction that settled it (empty when none was ever mined). */
    tx_hash: Type.String(),
    /** The USDC Transfer log's index in it; -1 when there is none. */
    log_index: Type.Integer({ minimum: -1 }),
    network: Type.String(),
  },
  { additionalProperties: false },
);
export type X402TopUpResult = Static<typeof X402TopUpResult>;

/** One x402 top-up in the balance's history. */
export const TopUp = Type.Object(
  {
    intent_id: Uuid,
    state: Type.Union([
      Type.Literal('VERIFIED'),
      Type.Literal('SETTLING'),
      Type.Literal('PENDING_FINALITY'),
      Type.Literal('CONFIRMED'),
      Type.Literal('EXCEPTION'),
    ]),
    network: Type.String(),
    payer: Type.String(),
    amount_micro: MicroTotal,
    credited_micro: Nullable(MicroTotal),
    reason: Nullable(Type.String()),
    tx_hash: Nullable(Type.String()),
    log_index: Nullable(Type.Integer({ minimum: -1 })),
    created_at: Rfc3339Utc,
    credited_at: Nullable(Rfc3339Utc),
  },
  { additionalProperties: false },
);
export type TopUp = Static<typeof TopUp>;

export const TopUpPage = Type.Object({ items: Type.Array(TopUp), next_cursor: Nullable(Type.String()) }, { additionalProperties: false });
export type TopUpPage = Static<typeof TopUpPage>;
