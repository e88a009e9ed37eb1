import { DomainError } from '../../errors.js';

// Host market statistics (contract part 2 "Host market bucket"): pure computation over one snapshot of the
// store's history. Nothing here knows a machine, host or offer identifier; the caller's own rate is computed
// separately (yourRate) from the caller's machines only.

export const MARKET_WINDOW_MAX_DAYS = 365;
export const MARKET_DEFAULT_WINDOW = '30d';
const DAY_MS = 86_400_000;
const WINDOW = /^([1-9][0-9]{0,2})d$/;

/** Days in a `<n>d` window, 1..365; anything else is VALIDATION_FAILED (422). */
export function parseMarketWindow(text: string | undefined): number {
  const raw = text ?? MARKET_DEFAULT_WINDOW;
  const match = WINDOW.exec(raw);
  const days = match ? Number(match[1]) : 0;
  if (days < 1 || days > MARKET_WINDOW_MAX_DAYS) {
    throw new DomainError('VALIDATION_FAILED', `querystring/window must be <n>d with n from 1 to ${MARKET_WINDOW_MAX_DAYS}, e.g. 30d`);
  }
  return days;
}

/** One machine of the market, as the worker loads it: no identifier. Times are epoch milliseconds. */
export interface MarketMachine {
  gpuModel: string;
  gpuCount: number;
  /** The listed machine rate (current offer version), micro-USDC per hour. */
  rateMicro: bigint;
  /** Listing intervals [from, until), until null while still listed; in order. */
  listings: ReadonlyArray<{ from: number; until: number | null }>;
  /** Creation of the machine's first rental ever, or null. */
  firstRentalAt: number | null;
  /** When its last rental stopped occupying it; Infinity while one occupies it; null: never rented. */
  lastRentalEnd: number | null;
  /** GPUs held by occupying rentals at the snapshot time. */
  allocatedGpus: number;
}

export interface MarketBucket {
  gpuModel: string;
  sampleSize: number;
  listedGpus: number | null;
  allocatedGpus: number | null;
  utilizationPct: number | null;
  fillRatePct: number | null;
  rentalSampleSize: number | null;
  rate: { p10: bigint; median: bigint; p90: bigint } | null;
  medianTimeToFirstRentalS: bigint | null;
}

/** A bucket that reports only its sample size: every metric null. */
export function sizeOnly(gpuModel: string, sampleSize: number): MarketBucket {
  return {
    gpuModel,
    sampleSize,
    listedGpus: null,
    allocatedGpus: null,
    utilizationPct: null,
    fillRatePct: null,
    rentalSampleSize: null,
    rate: null,
    medianTimeToFirstRentalS: null,
  };
}

/** Whether one of the machine's listing intervals overlaps [from, to). */
export function listedDuring(machine: Pick<MarketMachine, 'listings'>, from: number, to: number): boolean {
  return machine.listings.some((l) => l.from < to && (l.until === null || l.until > from));
}

/** floor(100 * part / whole); whole > 0. */
export function flooredPct(part: number, whole: number): number {
  return Math.floor((100 * part) / whole);
}

/** IEC 60063's E24 series in hundredths: 24 steps a decade, each 7 to 15 % above the last. */
const E24 = [
  100n,
  110n,
  120n,
  130n,
  150n,
  160n,
  180n,
  200n,
  220n,
  240n,
  270n,
  300n,
  330n,
  360n,
  390n,
  430n,
  470n,
  510n,
  560n,
  620n,
  680n,
  750n,
  820n,
  910n,
];

/**
 * `rateMicro` on the E24 grid: the nearest step, nearness measured by ratio (the boundary between two steps is
 * their geometric mean), so 1_234_567 is 1_200_000 and 2_345_677 is 2_400_000. Every market rate figure is computed
 * from rates on this grid and published on it (README.md): what any snapshots reveal of one machine is its step.
 */
export function coarseRate(rateMicro: bigint): bigint {
  if (rateMicro <= 0n) return 0n;
  const decade = 10n ** BigInt(rateMicro.toString().length - 1);
  // r is below the boundary sqrt(a * b) * decade / 100 exactly when r^2 * 100^2 < a * b * decade^2 (no roots, no floats).
  const scaled = rateMicro * rateMicro * 10_000n;
  for (let i = 0; i < E24.length; i += 1) {
    const step = E24[i] as bigint;
    const next = E24[i + 1] ?? 1000n;
    if (scaled < step * next * decade * decade) return (step * decade) / 100n;
  }
  return 10n * decade;
}

/**
 * The reported p-th percentile of ascending `sorted` (length >= 3): the floored mean of the three adjacent
 * values centred on the nearest rank ceil(p/100 * n), the centre clamped to [2, n-1] (1-based). So no reported
 * rate is one machine's own rate unless three machines share it.
 */
export function blendedPercentile(sorted: readonly bigint[], p: number): bigint {
  const n = sorted.length;
  if (n < 3) throw new Error('a blended percentile needs at least three values');
  const rank = Math.max(1, Math.ceil((p / 100) * n));
  const centre = Math.min(Math.max(rank - 1, 1), n - 2);
  return ((sorted[centre - 1] as bigint) + (sorted[centre] as bigint) + (sorted[centre + 1] as bigint)) / 3n;
}

/** The median of ascending `sorted` (non-empty): the middle value, or the floored mean of the two middle ones. */
export function median(sorted: readonly bigint[]): bigint {
  const n = sorted.length;
  if (n === 0) throw new Error('the median of nothing');
  const mid = Math.floor(n / 2);
  return n % 2 === 1 ? (sorted[mid] as bigint) : ((sorted[mid - 1] as bigint) + (sorted[mid] as bigint)) / 2n;
}

const ascending = (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * One GPU model's bucket over [from, to) (epoch ms). `machines` are that model's machines; the sample is those
 * listed during the window. Below `minSampleSize` only the sample size is reported; the time-to-first-rental
 * median is also gated by its own sample (machines whose first rental fell in the window).
 */
export function marketBucket(
  gpuModel: string,
  machines: readonly MarketMachine[],
  from: number,
  to: number,
  minSampleSize: number,
): MarketBucket {
  const sample = machines.filter((m) => listedDuring(m, from, to));
  const empty = sizeOnly(gpuModel, sample.length);
  if (sample.length < minSampleSize || sample.length === 0) return empty;
  let listedGpus = 0;
  let allocatedGpus = 0;
  let filled = 0;
  const waits: bigint[] = [];
  for (const m of sample) {
    listedGpus += m.gpuCount;
    allocatedGpus += Math.min(m.allocatedGpus, m.gpuCount);
    if (m.firstRentalAt !== null && m.firstRentalAt < to && m.lastRentalEnd !== null && m.lastRentalEnd > from) filled += 1;
    const firstListed = m.listings[0]?.from;
    if (m.firstRentalAt !== null && firstListed !== undefined && m.firstRentalAt >= from && m.firstRentalAt < to) {
      waits.push(BigInt(Math.max(0, Math.floor((m.firstRentalAt - firstListed) / 1000))));
    }
  }
  // Coarse in, coarse out: the figures depend on each rate's E24 step only, so no difference of snapshots and no
  // rate of the reader's own can tell more of another machine's rate than its step (README.md).
  const rates = sample.map((m) => coarseRate(m.rateMicro)).sort(ascending);
  const percentile = (p: number) => coarseRate(blendedPercentile(rates, p));
  waits.sort(ascending);
  return {
    ...empty,
    listedGpus,
    allocatedGpus,
    utilizationPct: listedGpus > 0 ? flooredPct(allocatedGpus, listedGpus) : 0,
    fillRatePct: flooredPct(filled, sample.length),
    rentalSampleSize: waits.length,
    rate: { p10: percentile(10), median: percentile(50), p90: percentile(90) },
    medianTimeToFirstRentalS: waits.length >= minSampleSize ? median(waits) : null,
  };
}

/** Every model's bucket for each window of 1..maxDays days ending at `to`: what the worker stores. */
export function marketSnapshot(
  machines: readonly MarketMachine[],
  to: number,
  minSampleSize: number,
  maxDays = MARKET_WINDOW_MAX_DAYS,
): Array<{ windowDays: number; bucket: MarketBucket }> {
  const byModel = new Map<string, MarketMachine[]>();
  for (const m of machines) {
    const list = byModel.get(m.gpuModel) ?? [];
    list.push(m);
    byModel.set(m.gpuModel, list);
  }
  // Sorted by rate once: each window's sample keeps the order, so its percentiles need no sort of their own.
  for (const list of byModel.values()) list.sort((a, b) => ascending(a.rateMicro, b.rateMicro));
  const models = [...byModel.keys()].sort();
  const out: Array<{ windowDays: number; bucket: MarketBucket }> = [];
  for (let days = 1; days <= maxDays; days += 1) {
    const from = to - days * DAY_MS;
    for (const model of models) {
      const bucket = marketBucket(model, byModel.get(model) ?? [], from, to, minSampleSize);
      if (bucket.sampleSize > 0) out.push({ windowDays: days, bucket });
    }
  }
  return out;
}

/** The caller's own median listed rate among its machines listed in [from, to), or null when it has none. */
export function yourRate(own: ReadonlyArray<Pick<MarketMachine, 'rateMicro' | 'listings'>>, from: number, to: number): bigint | null {
  const rates = own.filter((m) => listedDuring(m, from, to)).map((m) => m.rateMicro);
  return rates.length === 0 ? null : median(rates.sort(ascending));
}

/**
 * The caller's own median for every window of 1..maxDays days ending at `to`, as change points: [fromDays, rate]
 * holds for every window from fromDays up to the next point's. A window's sample only grows with its length.
 */
export function yourRateSteps(
  own: ReadonlyArray<Pick<MarketMachine, 'rateMicro' | 'listings'>>,
  to: number,
  maxDays = MARKET_WINDOW_MAX_DAYS,
): Array<{ fromDays: number; rate: bigint | null }> {
  const steps: Array<{ fromDays: number; rate: bigint | null }> = [];
  for (let days = 1; days <= maxDays; days += 1) {
    const rate = yourRate(own, windowStart(to, days), to);
    if (steps.length === 0 || steps[steps.length - 1]?.rate !== rate) steps.push({ fromDays: days, rate });
  }
  return steps;
}

export function windowStart(to: number, days: number): number {
  return to - days * DAY_MS;
}
