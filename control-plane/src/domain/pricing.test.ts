import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { estimatedTotalMicro, maxMachineRateForTotal, totalRateMicroPerHour } from './pricing.js';

describe('pricing', () => {
  it('total rate = floor(rate * (10000 + fee bps) / 10000)', () => {
    expect(totalRateMicroPerHour(1_000_000n, 1000)).toBe(1_100_000n);
    expect(totalRateMicroPerHour(999n, 1000)).toBe(1098n); // 1098.9 floors
    expect(totalRateMicroPerHour(1n, 1)).toBe(1n);
    expect(totalRateMicroPerHour(123_456_789n, 0)).toBe(123_456_789n);
    expect(totalRateMicroPerHour(7n, 10_000)).toBe(14n);
    expect(totalRateMicroPerHour(10n ** 15n, 250n)).toBe(1_025_000_000_000_000n);
  });

  it('refuses negative inputs', () => {
    expect(() => totalRateMicroPerHour(-1n, 0)).toThrow(RangeError);
    expect(() => totalRateMicroPerHour(1n, -1)).toThrow(RangeError);
  });

  it('the rate ceiling for a total is exact: rate <= ceiling <=> total(rate) <= max', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: 10n ** 16n }),
        fc.bigInt({ min: 0n, max: 10n ** 16n }),
        fc.integer({ min: 0, max: 10_000 }),
        (rate, max, fee) => {
          const ceiling = maxMachineRateForTotal(max, fee);
          expect(rate <= ceiling).toBe(totalRateMicroPerHour(rate, fee) <= max);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('estimates a quote total from the total rate', () => {
    expect(estimatedTotalMicro(1_100_000n, 3600n)).toBe(1_100_000n);
    expect(estimatedTotalMicro(1_100_000n, 1n)).toBe(305n);
  });
});
