import { INT64_MAX, MICRO_AMOUNT_MAX } from '@ark/shared';
import { describe, expect, it } from 'vitest';
import { amountTooLarge, balancesWithinLimit, LEDGER_BALANCE_MAX_MICRO, MAX_TRANSFER_MICRO } from './postings.js';

describe('ledger bounds', () => {
  it('moves at most one MicroAmount per posting', () => {
    expect(MAX_TRANSFER_MICRO).toBe(MICRO_AMOUNT_MAX);
    expect(amountTooLarge(MAX_TRANSFER_MICRO)).toBe(false);
    expect(amountTooLarge(MAX_TRANSFER_MICRO + 1n)).toBe(true);
  });

  it('keeps balances within 10^18 either way, so a balance plus one more amount never nears int8', () => {
    expect(balancesWithinLimit(LEDGER_BALANCE_MAX_MICRO, -LEDGER_BALANCE_MAX_MICRO)).toBe(true);
    expect(balancesWithinLimit(LEDGER_BALANCE_MAX_MICRO + 1n, 0n)).toBe(false);
    expect(balancesWithinLimit(0n, -LEDGER_BALANCE_MAX_MICRO - 1n)).toBe(false);
    // Sums of a few bounded balances stay inside int8, which a store's sum() must not overflow.
    expect(9n * LEDGER_BALANCE_MAX_MICRO + MAX_TRANSFER_MICRO).toBeLessThan(INT64_MAX);
  });
});
