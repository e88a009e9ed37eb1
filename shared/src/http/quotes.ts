import { type Static, Type } from '@sinclair/typebox';
import { ImageDigest, Int64String, MicroAmount, MicroTotal, Rfc3339Utc, Sha256Hash, Uuid } from '../formats.js';

// Quotes (contract part 2 "Quote", part 8 "Quote lifetime"): a binding price for one offer, valid 60 seconds.

/** Contract part 8: quotes expire 60 seconds after creation. */
export const QUOTE_LIFETIME_S = 60;
/** Longest duration limit a quote (or a budget extension) may ask for: 30 days. */
export const JOB_DURATION_LIMIT_MAX_S = 30 * 86_400;
/** Most GPUs one job may ask for (the manifest lists at most 64). */
export const JOB_GPU_COUNT_MAX = 64;

/**
 * `POST /api/v1/quotes`. Exactly one of `template_id` (the template's runtime for the machine's backend) and
 * `image_digest` (a custom image pinned by digest). `expected_version` pins the offer version the renter looked at
 * (OfferSummary.expected_version); a newer one answers OFFER_NOT_CURRENT.
 */
export const QuoteRequest = Type.Object(
  {
    offer_id: Uuid,
    gpu_count: Type.Integer({ minimum: 1, maximum: JOB_GPU_COUNT_MAX }),
    duration_limit_s: Type.Integer({ minimum: 1, maximum: JOB_DURATION_LIMIT_MAX_S }),
    budget_micro: Type.Optional(MicroAmount),
    template_id: Type.Optional(Uuid),
    image_digest: Type.Optional(ImageDigest),
    expected_version: Type.Optional(Int64String),
  },
  { additionalProperties: false },
);
export type QuoteRequest = Static<typeof QuoteRequest>;

/** Contract part 2, Quote (no additional properties). */
export const Quote = Type.Object(
  {
    quote_id: Uuid,
    expires_at: Rfc3339Utc,
    machine_id: Uuid,
    gpu_count: Type.Integer({ minimum: 1 }),
    machine_rate_micro_per_hour: MicroAmount,
    platform_fee_bps: Type.Integer({ minimum: 0 }),
    budget_micro: MicroAmount,
    duration_limit_s: Type.Integer({ minimum: 1 }),
    manifest_hash: Sha256Hash,
    image_digest: ImageDigest,
    terms_version: Type.String(),
    meter_start: Type.Literal('verified_ready'),
    included_disk_gib: Type.Optional(Type.Integer({ minimum: 0 })),
    included_egress_gib: Type.Optional(Type.Integer({ minimum: 0 })),
    template_id: Type.Optional(Uuid),
    estimated_total_micro: Type.Optional(MicroTotal),
  },
  { additionalProperties: false },
);
export type Quote = Static<typeof Quote>;
