import { type Static, Type } from '@sinclair/typebox';
import { MicroTotal } from '../formats.js';
import { JobCreditLine } from './credits.js';
import { DepositPage } from './deposits.js';
import { TopUpPage } from './x402.js';

/** `GET /api/v1/billing/balance`: the caller's prepaid balance. */
export const BillingBalance = Type.Object(
  {
    /** Spendable now. */
    available_micro: MicroTotal,
    /** Reserved by the caller's jobs (the sum of their holds); returns to available as jobs close. */
    held_micro: MicroTotal,
    currency: Type.Literal('USDC'),
    /** The caller's deposits, newest first; `cursor` and `limit` in the query page them. */
    deposits: DepositPage,
    /** The caller's x402 top-ups, newest first (state, network, tx hash); `top_ups_cursor` and `limit` page them. */
    top_ups: TopUpPage,
    /** Automatic credits for the caller's jobs that failed through their host, newest first (at most `limit`). */
    credits: Type.Array(JobCreditLine),
  },
  { additionalProperties: false },
);
export type BillingBalance = Static<typeof BillingBalance>;
