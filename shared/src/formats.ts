import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { MICRO_AMOUNT_MAX, UUID_PATTERN } from './limits.js';

// Scalar formats of contract part 2. Each schema and its type share one name.

export { MICRO_AMOUNT_MAX, UUID_PATTERN };

export const Uuid = Type.String({ format: 'uuid', pattern: UUID_PATTERN.source });
export type Uuid = Static<typeof Uuid>;

export const Rfc3339Utc = Type.String({
  format: 'date-time',
  pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d+)?Z$',
});
export type Rfc3339Utc = Static<typeof Rfc3339Utc>;

// Longest decimal we accept: 38 digits keeps every value inside a Postgres numeric(38). Only for values that are
// compared, never stored (list filters, which clamp): everything stored has a bounded type below.
export const DecimalString = Type.String({ pattern: '^(0|[1-9][0-9]*)$', maxLength: 38 });
export type DecimalString = Static<typeof DecimalString>;

// ---- Bounded decimal strings ----
// A decimal from the wire that is stored, summed or multiplied has one documented upper bound in its schema, enforced by
// an exact pattern (every validator enforces it and the OpenAPI document shows it) and a maxLength (a cheap early
// refusal). Nothing within the bounds can overflow the stores' 64-bit integer columns.

/** Largest signed 64-bit integer (2^63 - 1): what Postgres bigint and SQLite INTEGER columns hold. */
export const INT64_MAX = 9_223_372_036_854_775_807n;

/** Largest ByteCount: 2^63 - 1 bytes (8 EiB), what a 64-bit integer column holds. */
export const BYTE_COUNT_MAX = INT64_MAX;

const digitClass = (low: number, high: number) => (low === high ? String(low) : `[${low}-${high}]`);
const anyDigits = (n: number) => (n === 0 ? '' : n === 1 ? '[0-9]' : `[0-9]{${n}}`);

/**
 * The source of a regular expression matching exactly the canonical decimal strings 0..max (no sign, no leading zero,
 * no exponent): shorter numbers, then each way a number of max's length can be smaller than max, then max itself.
 */
export function decimalAtMostPattern(max: bigint): string {
  if (max < 0n) throw new RangeError('a decimal bound must not be negative');
  const digits = max.toString();
  const length = digits.length;
  const alternatives = ['0'];
  if (length > 2) alternatives.push(`[1-9][0-9]{0,${length - 2}}`);
  else if (length === 2) alternatives.push('[1-9]');
  for (let i = 0; i < length; i++) {
    const digit = Number(digits[i]);
    const low = i === 0 ? 1 : 0;
    if (digit > low) alternatives.push(`${digits.slice(0, i)}${digitClass(low, digit - 1)}${anyDigits(length - 1 - i)}`);
  }
  if (max > 0n) alternatives.push(digits);
  return `^(${alternatives.join('|')})$`;
}

const boundsByPattern = new Map<string, bigint>();

/** A decimal string of at most `max`; the bound is part of the schema and its description. */
function boundedDecimal(max: bigint, description: string) {
  const pattern = decimalAtMostPattern(max);
  boundsByPattern.set(pattern, max);
  return Type.String({
    pattern,
    maxLength: max.toString().length,
    description: `${description}: a base-10 integer string from 0 to ${max}`,
  });
}

/** The upper bound a bounded decimal schema enforces (undefined for any other schema): validators name it in messages. */
export function decimalBoundOf(schema: { pattern?: unknown } | null | undefined): bigint | undefined {
  return typeof schema?.pattern === 'string' ? boundsByPattern.get(schema.pattern) : undefined;
}

/** One amount of money (a budget, an extension, a rate, a charge): at most MICRO_AMOUNT_MAX. */
export const MicroAmount = boundedDecimal(MICRO_AMOUNT_MAX, 'micro-USDC (1 USDC = 1000000 micro; the bound is one billion USDC)');
export type MicroAmount = Static<typeof MicroAmount>;

/**
 * A total of amounts in answers (a balance, the sum of holds, a rate with its fee, an estimate): at most INT64_MAX.
 * Never accepted in a request; the ledger keeps every balance within LEDGER_BALANCE_MAX_MICRO.
 */
export const MicroTotal = boundedDecimal(INT64_MAX, 'micro-USDC (1 USDC = 1000000 micro), a total of amounts');
export type MicroTotal = Static<typeof MicroTotal>;

/** A size in bytes (RAM, disk, VRAM): at most BYTE_COUNT_MAX. */
export const ByteCount = boundedDecimal(BYTE_COUNT_MAX, 'bytes');
export type ByteCount = Static<typeof ByteCount>;

/** A version, fence or count of milliseconds: a stored 64-bit integer, at most INT64_MAX. */
export const Int64String = boundedDecimal(INT64_MAX, 'a 64-bit counter');
export type Int64String = Static<typeof Int64String>;

/** Largest JSON integer a counter may carry (2^53 - 1): exact as a JSON number, and inside a 64-bit column. */
export const COUNTER_MAX = Number.MAX_SAFE_INTEGER;

export const EvmAddress = Type.String({ pattern: '^0x[0-9a-fA-F]{40}$' });
export type EvmAddress = Static<typeof EvmAddress>;

export const Sha256Hash = Type.String({ pattern: '^sha256:[0-9a-f]{64}$' });
export type Sha256Hash = Static<typeof Sha256Hash>;

export const ImageDigest = Type.String({ pattern: '^[^@\\s]+@sha256:[0-9a-f]{64}$', maxLength: 512 });
export type ImageDigest = Static<typeof ImageDigest>;

export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
