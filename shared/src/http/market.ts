import { type Static, Type } from '@sinclair/typebox';
import { DecimalString, MicroAmount, Nullable, Rfc3339Utc } from '../formats.js';

// Host market statistics (contract part 2 "Host market bucket", part 4 GET /api/v1/hosts/market).

export const MarketQuery = Type.Object(
  {
    gpu_model: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'exact manifest GPU model' })),
    window: Type.Optional(Type.String({ maxLength: 16, description: '<n>d with n from 1 to 365; default 30d' })),
  },
  { additionalProperties: false },
);
export type MarketQuery = Static<typeof MarketQuery>;

export const MarketBucket = Type.Object(
  {
    gpu_model: Type.String(),
    sample_size: Type.Integer({ minimum: 0 }),
    listed_gpus: Nullable(Type.Integer({ minimum: 0 })),
    allocated_gpus: Nullable(Type.Integer({ minimum: 0 })),
    utilization_pct: Nullable(Type.Integer({ minimum: 0, maximum: 100 })),
    fill_rate_pct: Nullable(Type.Integer({ minimum: 0, maximum: 100 })),
    rental_sample_size: Nullable(Type.Integer({ minimum: 0 })),
    rate_micro: Nullable(
      Type.Object({ p10_micro: MicroAmount, median_micro: MicroAmount, p90_micro: MicroAmount }, { additionalProperties: false }),
    ),
    median_time_to_first_rental_s: Nullable(DecimalString),
    your_rate_micro: Nullable(MicroAmount),
  },
  { additionalProperties: false },
);
export type MarketBucket = Static<typeof MarketBucket>;

export const MarketResponse = Type.Object(
  {
    window_days: Type.Integer({ minimum: 1, maximum: 365 }),
    from: Rfc3339Utc,
    to: Rfc3339Utc,
    min_sample_size: Type.Integer({ minimum: 1 }),
    models: Type.Array(MarketBucket),
  },
  { additionalProperties: false },
);
export type MarketResponse = Static<typeof MarketResponse>;
