import { type Static, Type } from '@sinclair/typebox';
import { MicroAmount, MicroTotal } from '../formats.js';

// The spend-rate cap (issue 10 item 5): an account-wide ceiling on the summed hourly rate of the account's jobs that
// may still spend money. Additive to contract v3 (account fields are left open).

export const SpendCap = Type.Object(
  {
    cap_micro_per_hour: MicroAmount,
    default_cap_micro_per_hour: MicroAmount,
    is_default: Type.Boolean(),
    committed_micro_per_hour: MicroTotal,
    available_micro_per_hour: MicroTotal,
  },
  {
    additionalProperties: false,
    description:
      "cap_micro_per_hour: the account's cap (the operator's default_cap_micro_per_hour while is_default). " +
      'committed_micro_per_hour: the summed total hourly rate (machine rate plus platform fee) of its jobs from RESERVED until ' +
      'they stop (RESERVED, STARTING, RUNNING, RECONCILING, STOPPING). available_micro_per_hour: cap minus committed, never ' +
      'below 0: the largest total rate one more reservation may have.',
  },
);
export type SpendCap = Static<typeof SpendCap>;

export const SpendCapUpdateRequest = Type.Object(
  {
    cap_micro_per_hour: Type.Union([MicroAmount, Type.Null()], { description: "the new cap; null: back to the operator's default" }),
  },
  { additionalProperties: false },
);
export type SpendCapUpdateRequest = Static<typeof SpendCapUpdateRequest>;
