import { type Static, type TSchema, Type } from '@sinclair/typebox';

// Scalar formats of contract part 2. Each schema and its type share one name.

/** The 8-4-4-4-12 hex form; also exported for code that checks ids outside a schema (headers, CLI flags). */
export const UUID_PATTERN = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export const Uuid = Type.String({ format: 'uuid', pattern: UUID_PATTERN.source });
export type Uuid = Static<typeof Uuid>;

export const Rfc3339Utc = Type.String({
  format: 'date-time',
  pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?Z$',
});
export type Rfc3339Utc = Static<typeof Rfc3339Utc>;

// Longest decimal we accept: 38 digits keeps every value inside a Postgres numeric(38) and far above any real amount.
export const DecimalString = Type.String({ pattern: '^(0|[1-9][0-9]*)$', maxLength: 38 });
export type DecimalString = Static<typeof DecimalString>;

export const MicroAmount = Type.String({
  pattern: '^(0|[1-9][0-9]*)$',
  maxLength: 38,
  description: 'micro-USDC (1 USDC = 1000000 micro), base-10 integer string',
});
export type MicroAmount = Static<typeof MicroAmount>;

export const EvmAddress = Type.String({ pattern: '^0x[0-9a-fA-F]{40}$' });
export type EvmAddress = Static<typeof EvmAddress>;

export const Sha256Hash = Type.String({ pattern: '^sha256:[0-9a-f]{64}$' });
export type Sha256Hash = Static<typeof Sha256Hash>;

export const ImageDigest = Type.String({ pattern: '^[^@\\s]+@sha256:[0-9a-f]{64}$', maxLength: 512 });
export type ImageDigest = Static<typeof ImageDigest>;

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
