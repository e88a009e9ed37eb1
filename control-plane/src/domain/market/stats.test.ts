import { describe, expect, it } from 'vitest';
import { DomainError } from '../../errors.js';
import {
  blendedPercentile,
  coarseRate,
  flooredPct,
  type MarketMachine,
  marketBucket,
  marketSnapshot,
  median,
  parseMarketWindow,
  yourRate,
  yourRateSteps,
} from './stats.js';

const DAY = 86_400_000;
const T = Date.parse('2026-06-01T00:00:00.000Z');

function machine(over: Partial<MarketMachine> = {}): MarketMachine {
  return {
    gpuModel: 'A',
    gpuCount: 2,
    rateMicro: 1_000_000n,
    listings: [{ from: T - 40 * DAY, until: null }],
    firstRentalAt: null,
    lastRentalEnd: null,
    allocatedGpus: 0,
    ...over,
  };
}

describe('market window', () => {
  it('accepts 1d..365d, default 30d, and refuses anything else with VALIDATION_FAILED', () => {
    expect(parseMarketWindow(undefined)).toBe(30);
    expect(parseMarketWindow('1d')).toBe(1);
    expect(parseMarketWindow('365d')).toBe(365);
    for (const bad of ['0d', '366d', '30', '30h', 'd', '01d', '1.5d', '-1d', ' 30d', '1000d']) {
      expect(() => parseMarketWindow(bad), bad).toThrow(DomainError);
    }
  });
});

describe('percentiles and flooring', () => {
  it('floors percentages', () => {
    expect(flooredPct(2, 3)).toBe(66);
    expect(flooredPct(1, 3)).toBe(33);
    expect(flooredPct(3, 3)).toBe(100);
    expect(flooredPct(0, 7)).toBe(0);
  });

  it('blends the three values around the nearest rank, floored, clamped to the ends', () => {
    const five = [10n, 20n, 31n, 40n, 100n];
    expect(blendedPercentile(five, 10)).toBe(20n); // (10+20+31)/3 = 20.33
    expect(blendedPercentile(five, 50)).toBe(30n); // (20+31+40)/3 = 30.33
    expect(blendedPercentile(five, 90)).toBe(57n); // (31+40+100)/3 = 57
    const ten = [1n, 2n, 3n, 4n, 5n, 6n, 7n, 8n, 9n, 11n];
    expect(blendedPercentile(ten, 10)).toBe(2n); // rank 1, centre clamped to 2: (1+2+3)/3
    expect(blendedPercentile(ten, 50)).toBe(5n); // rank 5: (4+5+6)/3
    expect(blendedPercentile(ten, 90)).toBe(9n); // rank 9: (8+9+11)/3 = 9.33
    expect(() => blendedPercentile([1n, 2n], 50)).toThrow();
  });

  it('takes the middle value, or the floored mean of the two middle ones', () => {
    expect(median([5n])).toBe(5n);
    expect(median([1n, 2n, 9n])).toBe(2n);
    expect(median([1n, 2n, 3n, 10n])).toBe(2n);
    expect(median([1n, 4n])).toBe(2n);
  });
});

describe('coarse rates', () => {
  it('puts a rate on the nearest E24 step, nearness by ratio', () => {
    expect(coarseRate(1_000_000n)).toBe(1_000_000n);
    expect(coarseRate(1_234_567n)).toBe(1_200_000n);
    expect(coarseRate(2_345_677n)).toBe(2_400_000n);
    // The boundary between 1.3 and 1.5 is sqrt(1.3 * 1.5) = 1.3964.
    expect(coarseRate(1_396_000n)).toBe(1_300_000n);
    expect(coarseRate(1_397_000n)).toBe(1_500_000n);
    // Past 9.1 the next step is the next decade's 1.0; the boundary is sqrt(9.1 * 10) = 9.539.
    expect(coarseRate(9_539_000n)).toBe(9_100_000n);
    expect(coarseRate(9_540_000n)).toBe(10_000_000n);
    expect(coarseRate(0n)).toBe(0n);
    // Every step is its own image, and the grid only ever goes up with the rate.
    let last = 0n;
    for (let r = 1n; r < 5_000_000n; r += 9_973n) {
      const c = coarseRate(r);
      expect(c >= last, String(r)).toBe(true);
      expect(coarseRate(c), String(c)).toBe(c);
      last = c;
    }
  });

  it('keeps every figure of a bucket whatever rate moves within its step: the differencing attack has nothing to find', () => {
    // A seeded walk (no flaky randomness): the sample, then one machine's rate moved to another value of its step.
    let seed = 22;
    const next = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed;
    };
    for (let round = 0; round < 200; round += 1) {
      const n = 3 + (next() % 8);
      const rates = Array.from({ length: n }, () => BigInt(500_000 + (next() % 4_000_000)));
      const bucket = marketBucket(
        'A',
        rates.map((rateMicro) => machine({ rateMicro })),
        T - DAY,
        T,
        3,
      );
      const i = next() % n;
      const step = coarseRate(rates[i] as bigint);
      // Another rate of the same step: scan from the step's value outwards until the step changes.
      const moved = [...rates];
      for (const candidate of [step - 1_000n, step + 1_000n, step - 20_000n, step + 20_000n, step]) {
        if (coarseRate(candidate) === step && candidate !== rates[i]) {
          moved[i] = candidate;
          break;
        }
      }
      const again = marketBucket(
        'A',
        moved.map((rateMicro) => machine({ rateMicro })),
        T - DAY,
        T,
        3,
      );
      expect(again.rate, `round ${round}`).toEqual(bucket.rate);
      for (const figure of Object.values(bucket.rate ?? {})) expect(coarseRate(figure)).toBe(figure);
    }
  });
});

describe('market bucket', () => {
  it('computes every figure over the machines listed in [from, to)', () => {
    const from = T - 30 * DAY;
    const machines = [
      machine({ rateMicro: 100n, firstRentalAt: T - 10 * DAY, lastRentalEnd: Number.POSITIVE_INFINITY, allocatedGpus: 1 }),
      machine({
        rateMicro: 200n,
        gpuCount: 4,
        listings: [{ from: T - 5 * DAY, until: null }],
        firstRentalAt: T - 5 * DAY + 60_000,
        lastRentalEnd: T - DAY,
      }),
      machine({
        rateMicro: 300n,
        listings: [{ from: T - 3 * DAY, until: null }],
        firstRentalAt: T - 3 * DAY + 120_000,
        lastRentalEnd: T - DAY,
      }),
      machine({
        rateMicro: 400n,
        listings: [{ from: T - 9 * DAY, until: null }],
        firstRentalAt: T - 9 * DAY + 30_000,
        lastRentalEnd: Number.POSITIVE_INFINITY,
        allocatedGpus: 2,
      }),
      // Rented only before the window: not filled, and its first rental is not in the window.
      machine({ rateMicro: 500n, firstRentalAt: T - 35 * DAY, lastRentalEnd: T - 34 * DAY }),
      // Listed only before the window: not in the sample.
      machine({ rateMicro: 9_999n, listings: [{ from: T - 60 * DAY, until: T - 31 * DAY }] }),
      // Listed exactly at `to`: half-open, not in the sample.
      machine({ rateMicro: 8_888n, listings: [{ from: T, until: null }] }),
    ];
    const bucket = marketBucket('A', machines, from, T, 3);
    expect(bucket).toEqual({
      gpuModel: 'A',
      sampleSize: 5,
      listedGpus: 12,
      allocatedGpus: 3,
      utilizationPct: 25,
      fillRatePct: 80,
      rentalSampleSize: 4,
      // 100 200 300 400 500 on the E24 grid: 100 200 300 390 510. p10 (100+200+300)/3 = 200, median
      // (200+300+390)/3 = 296 -> 300, p90 (300+390+510)/3 = 400 -> 390: each blend put on the grid again.
      rate: { p10: 200n, median: 300n, p90: 390n },
      // Waits 30 days, 60 s, 120 s, 30 s: sorted 30, 60, 120, 2592000 -> (60+120)/2
      medianTimeToFirstRentalS: 90n,
    });
  });

  it('reports only the sample size under the minimum, and gates the rental median by its own sample', () => {
    const two = [machine({ rateMicro: 1n }), machine({ rateMicro: 2n })];
    expect(marketBucket('A', two, T - DAY, T, 3)).toEqual({
      gpuModel: 'A',
      sampleSize: 2,
      listedGpus: null,
      allocatedGpus: null,
      utilizationPct: null,
      fillRatePct: null,
      rentalSampleSize: null,
      rate: null,
      medianTimeToFirstRentalS: null,
    });
    const three = [machine({ firstRentalAt: T - 1000, lastRentalEnd: Number.POSITIVE_INFINITY }), machine(), machine()];
    const bucket = marketBucket('A', three, T - DAY, T, 3);
    expect(bucket.rentalSampleSize).toBe(1);
    expect(bucket.medianTimeToFirstRentalS).toBeNull();
    expect(bucket.fillRatePct).toBe(33);
  });

  it('snapshots every window, so a narrow window that isolates one machine reports nothing but its size', () => {
    const machines = [
      machine({ listings: [{ from: T - 20 * DAY, until: null }] }),
      machine({ listings: [{ from: T - 20 * DAY, until: null }] }),
      machine({ listings: [{ from: T - 20 * DAY, until: T - 2 * DAY }] }),
      machine({ rateMicro: 777n, listings: [{ from: T - 40 * DAY, until: T - 25 * DAY }] }),
      machine({ gpuModel: 'B' }),
    ];
    const rows = marketSnapshot(machines, T, 3, 30);
    const at = (days: number, model: string) => rows.find((r) => r.windowDays === days && r.bucket.gpuModel === model)?.bucket;
    expect(at(1, 'A')?.sampleSize).toBe(2);
    expect(at(1, 'A')?.rate).toBeNull();
    expect(at(3, 'A')?.sampleSize).toBe(3);
    expect(at(3, 'A')?.rate).not.toBeNull();
    expect(at(26, 'A')?.sampleSize).toBe(4);
    expect(at(30, 'B')).toMatchObject({ sampleSize: 1, rate: null, listedGpus: null });
    expect(rows.filter((r) => r.windowDays === 7)).toHaveLength(2);
  });

  it('takes the caller’s median over its own machines listed in the window', () => {
    const own = [
      machine({ rateMicro: 10n }),
      machine({ rateMicro: 30n }),
      machine({ rateMicro: 99n, listings: [{ from: T, until: null }] }),
    ];
    expect(yourRate(own, T - DAY, T)).toBe(20n);
    expect(yourRate([], T - DAY, T)).toBeNull();
  });

  it('stores the caller’s median as change points over the windows (a window’s sample only grows)', () => {
    const own = [
      machine({ rateMicro: 10n, listings: [{ from: T - 40 * DAY, until: null }] }),
      machine({ rateMicro: 50n, listings: [{ from: T - 40 * DAY, until: T - 3 * DAY }] }),
      machine({ rateMicro: 90n, listings: [{ from: T - 40 * DAY, until: T - 10 * DAY + 1 }] }),
    ];
    // 1..3 days: only 10; 4..9 days: 10 and 50 -> 30; 10 days on: 10, 50, 90 -> 50.
    expect(yourRateSteps(own, T, 30)).toEqual([
      { fromDays: 1, rate: 10n },
      { fromDays: 4, rate: 30n },
      { fromDays: 10, rate: 50n },
    ]);
    expect(yourRateSteps([], T, 5)).toEqual([{ fromDays: 1, rate: null }]);
  });
});
