import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { chargeDelta, chargesFor, estimatedTotalMicro, fundedRuntimeMs, fundedThrough, MS_PER_HOUR, totalRateOf } from './charges.js';

const rate = (machine: bigint, feeBps: bigint) => ({ machineRateMicroPerHour: machine, platformFeeBps: feeBps });

describe('chargesFor', () => {
  it('charges floor(total rate * runtime / 1 h) and splits it by the machine rate', () => {
    // 0.5 USDC/h machine rate, 10% fee: 0.55 USDC/h total.
    const r = rate(500_000n, 1000n);
    expect(totalRateOf(r)).toBe(550_000n);
    const c = chargesFor(r, 1_000_000n, 30_000n);
    expect(c.cumulativeMicro).toBe(4583n);
    expect(c.hostMicro).toBe(4166n);
    expect(c.feeMicro).toBe(417n);
    // An hour: exactly the rates.
    expect(chargesFor(r, 10_000_000n, MS_PER_HOUR)).toEqual({ cumulativeMicro: 550_000n, hostMicro: 500_000n, feeMicro: 50_000n });
  });

  it('never charges past the funded budget, and keeps the fee share under the cap', () => {
    const r = rate(1_000_000n, 1000n);
    const c = chargesFor(r, 100_000n, 10n * MS_PER_HOUR);
    expect(c.cumulativeMicro).toBe(100_000n);
    expect(c.hostMicro).toBe(90_909n);
    expect(c.feeMicro).toBe(9_091n);
  });

  it('charges nothing for nothing, and everything to the host without a fee', () => {
    expect(chargesFor(rate(1_000_000n, 1000n), 5n, 0n)).toEqual({ cumulativeMicro: 0n, hostMicro: 0n, feeMicro: 0n });
    expect(chargesFor(rate(3_600_000n, 0n), 10_000_000n, 1234n)).toEqual({ cumulativeMicro: 1234n, hostMicro: 1234n, feeMicro: 0n });
  });

  it('refuses negative inputs', () => {
    expect(() => chargesFor(rate(1n, 0n), 1n, -1n)).toThrow(RangeError);
    expect(() => chargesFor(rate(1n, 0n), -1n, 1n)).toThrow(RangeError);
  });

  it('chargeDelta refuses charges that go backwards', () => {
    expect(chargeDelta({ hostMicro: 5n, feeMicro: 1n }, { cumulativeMicro: 7n, hostMicro: 6n, feeMicro: 1n })).toEqual({
      hostMicro: 1n,
      feeMicro: 0n,
    });
    expect(() => chargeDelta({ hostMicro: 5n, feeMicro: 1n }, { cumulativeMicro: 5n, hostMicro: 4n, feeMicro: 1n })).toThrow();
  });

  const arbitraryRate = fc.record({
    machine: fc.bigInt({ min: 1n, max: 1_000_000_000_000n }),
    feeBps: fc.bigInt({ min: 0n, max: 10_000n }),
  });

  it('property: over any receipt sequence host + fee = cumulative <= budget, each monotone, host within a micro of the formula', () => {
    fc.assert(
      fc.property(
        arbitraryRate,
        fc.bigInt({ min: 1n, max: 1_000_000_000_000n }),
        fc.array(fc.bigInt({ min: 0n, max: 3_600_000n }), { minLength: 1, maxLength: 60 }),
        fc.array(fc.bigInt({ min: 0n, max: 1_000_000_000n }), { maxLength: 3 }),
        ({ machine, feeBps }, budget, receipts, extensions) => {
          const r = rate(machine, feeBps);
          const total = totalRateOf(r);
          let funded = budget;
          let runtime = 0n;
          let posted = { hostMicro: 0n, feeMicro: 0n };
          let previous = chargesFor(r, funded, 0n);
          receipts.forEach((ms, i) => {
            // Budget extensions land between receipts.
            if (i < extensions.length) funded += extensions[i] as bigint;
            runtime += ms;
            const next = chargesFor(r, funded, runtime);
            expect(next.hostMicro + next.feeMicro).toBe(next.cumulativeMicro);
            expect(next.cumulativeMicro).toBeLessThanOrEqual(funded);
            expect(next.cumulativeMicro).toBeGreaterThanOrEqual(previous.cumulativeMicro);
            expect(next.hostMicro).toBeGreaterThanOrEqual(previous.hostMicro);
            expect(next.feeMicro).toBeGreaterThanOrEqual(previous.feeMicro);
            expect(next.feeMicro).toBeGreaterThanOrEqual(0n);
            const delta = chargeDelta(posted, next);
            posted = { hostMicro: posted.hostMicro + delta.hostMicro, feeMicro: posted.feeMicro + delta.feeMicro };
            if ((total * runtime) / MS_PER_HOUR <= funded) {
              // Uncapped: the DESIGN formula exactly for the total, and for the host within one micro below.
              expect(next.cumulativeMicro).toBe((total * runtime) / MS_PER_HOUR);
              const formula = (machine * runtime) / MS_PER_HOUR;
              expect(next.hostMicro <= formula && next.hostMicro >= formula - 1n).toBe(true);
            }
            previous = next;
          });
          expect(posted.hostMicro + posted.feeMicro).toBe(previous.cumulativeMicro);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('fundedThrough', () => {
  const start = new Date('2026-01-01T00:00:00.000Z');
  const input = (budget: bigint, durationS: bigint, ceiling = '2027-01-01T00:00:00.000Z') => ({
    rate: rate(1_000_000n, 1000n),
    fundedBudgetMicro: budget,
    durationLimitS: durationS,
    hostCeilingAt: new Date(ceiling),
  });

  it('is start + floor(budget * 1 h / total rate) when the budget runs out first', () => {
    // 1.1 USDC/h total; 0.55 USDC funds half an hour.
    const result = fundedThrough(input(550_000n, 7200n), start);
    expect(result.at.toISOString()).toBe('2026-01-01T00:30:00.000Z');
    expect(result.bound).toBe('budget');
    expect(fundedRuntimeMs(550_000n, 1_100_000n)).toBe(1_800_000n);
  });

  it('never passes the duration limit nor the host ceiling', () => {
    expect(fundedThrough(input(100_000_000n, 600n), start)).toEqual({ at: new Date('2026-01-01T00:10:00.000Z'), bound: 'duration_limit' });
    expect(fundedThrough(input(100_000_000n, 7200n, '2026-01-01T00:05:00.000Z'), start)).toEqual({
      at: new Date('2026-01-01T00:05:00.000Z'),
      bound: 'host_ceiling',
    });
  });

  it('estimates a quote as floor(total rate * duration / 3600)', () => {
    expect(estimatedTotalMicro(rate(500_000n, 1000n), 3600n)).toBe(550_000n);
    expect(estimatedTotalMicro(rate(500_000n, 1000n), 1n)).toBe(152n);
  });
});
