import { TypeCompiler } from '@sinclair/typebox/compiler';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ByteCount,
  decimalAtMostPattern,
  decimalBoundOf,
  DecimalString,
  INT64_MAX,
  Int64String,
  MICRO_AMOUNT_MAX,
  MicroAmount,
} from './formats.js';

describe('bounded decimal strings', () => {
  it('matches exactly the canonical decimals from 0 to the bound', () => {
    const bounds = fc.oneof(
      fc.bigInt(0n, 100_000n),
      fc.bigInt(0n, INT64_MAX),
      fc.constantFrom(0n, 9n, 10n, 99n, 100n, MICRO_AMOUNT_MAX, INT64_MAX),
    );
    fc.assert(
      fc.property(bounds, fc.bigInt(0n, 2n ** 70n), fc.bigInt(-50n, 50n), (max, anyValue, offset) => {
        const re = new RegExp(decimalAtMostPattern(max), 'u');
        for (const value of [anyValue, max + offset, anyValue % (max + 1n)]) {
          if (value < 0n) continue;
          expect(re.test(value.toString()), `${value} against ${max}`).toBe(value <= max);
        }
      }),
      { seed: 7, numRuns: 2000 },
    );
  });

  it('refuses what only looks like a decimal', () => {
    const re = new RegExp(decimalAtMostPattern(MICRO_AMOUNT_MAX), 'u');
    for (const text of ['', '01', '-1', '+1', '1e3', '1.0', ' 1', '1 ', '0x1', '١']) expect(re.test(text), text).toBe(false);
  });

  it('puts the bound in the schema: pattern, maxLength and description, checked by TypeBox as by Ajv', () => {
    expect(MicroAmount.maxLength).toBe(16);
    expect(MicroAmount.description).toContain(`from 0 to ${MICRO_AMOUNT_MAX}`);
    expect(ByteCount.maxLength).toBe(19);
    const micro = TypeCompiler.Compile(MicroAmount);
    expect(micro.Check(MICRO_AMOUNT_MAX.toString())).toBe(true);
    expect(micro.Check((MICRO_AMOUNT_MAX + 1n).toString())).toBe(false);
    const bytes = TypeCompiler.Compile(ByteCount);
    expect(bytes.Check(INT64_MAX.toString())).toBe(true);
    expect(bytes.Check((INT64_MAX + 1n).toString())).toBe(false);
  });

  it('tells validators the bound of a bounded schema, and nothing for others', () => {
    expect(decimalBoundOf(MicroAmount)).toBe(MICRO_AMOUNT_MAX);
    expect(decimalBoundOf(Int64String)).toBe(INT64_MAX);
    expect(decimalBoundOf(DecimalString)).toBeUndefined();
    expect(decimalBoundOf(undefined)).toBeUndefined();
  });
});
