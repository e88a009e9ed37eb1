import { type Static, Type } from '@sinclair/typebox';
import { MicroAmount } from '../formats.js';

/** `GET /api/v1/billing/balance`: the caller's prepaid balance. */
export const BillingBalance = Type.Object(
  {
    /** Spendable now. */
    available_micro: MicroAmount,
    /** Reserved by the caller's jobs (the sum of their holds); returns to available as jobs close. */
    held_micro: MicroAmount,
    currency: Type.Literal('USDC'),
  },
  { additionalProperties: false },
);
export type BillingBalance = Static<typeof BillingBalance>;
