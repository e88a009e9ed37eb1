// Small charts drawn on the server as inline SVG (no script, no library): bars of an amount per UTC day.

export interface Bar {
  day: string;
  micro: bigint;
  /** Geometry in the SVG's own units (width 700, height 160). */
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface BarChart {
  bars: Bar[];
  maxMicro: bigint;
  totalMicro: bigint;
  width: number;
  height: number;
}

const WIDTH = 700;
const HEIGHT = 160;
const DAY_MS = 86_400_000;

/** Sums amounts per UTC day over the `days` days ending today (days without any count as zero), as bars. */
export function dailyBars(items: Array<{ at: string; micro: string | bigint }>, days: number, now: Date): BarChart {
  const today = Date.parse(`${now.toISOString().slice(0, 10)}T00:00:00.000Z`);
  const sums = new Map<string, bigint>();
  for (let i = days - 1; i >= 0; i--) sums.set(new Date(today - i * DAY_MS).toISOString().slice(0, 10), 0n);
  for (const item of items) {
    const day = item.at.slice(0, 10);
    const sum = sums.get(day);
    if (sum !== undefined) sums.set(day, sum + BigInt(item.micro));
  }
  let maxMicro = 0n;
  let totalMicro = 0n;
  for (const sum of sums.values()) {
    if (sum > maxMicro) maxMicro = sum;
    totalMicro += sum;
  }
  const slot = WIDTH / days;
  const bars = [...sums.entries()].map(([day, micro], index) => {
    const height = maxMicro === 0n ? 0 : Math.max(micro > 0n ? 1 : 0, Math.round((Number(micro) / Number(maxMicro)) * (HEIGHT - 20)));
    return {
      day,
      micro,
      x: Math.round(index * slot + slot * 0.1),
      y: HEIGHT - 14 - height,
      width: Math.max(1, Math.round(slot * 0.8)),
      height,
    };
  });
  return { bars, maxMicro, totalMicro, width: WIDTH, height: HEIGHT };
}

export interface TimelineBar {
  /** Bucket start, Unix seconds. */
  t: number;
  pct: number;
  x: number;
  y: number;
  width: number;
  height: number;
}

/**
 * A utilisation timeline over [fromS, toS]: one bar per 5-minute bucket at its place in time, as tall as its average
 * utilisation (0..100 %). Buckets without data leave a gap.
 */
export function timelineBars(points: Array<{ t: number; pct: number }>, fromS: number, toS: number, bucketS = 300) {
  const span = Math.max(1, toS - fromS);
  const width = Math.max(1, Math.round((bucketS / span) * WIDTH) - 1);
  const bars: TimelineBar[] = points
    .filter((p) => p.t >= fromS - bucketS && p.t <= toS)
    .map((p) => {
      const pct = Math.min(100, Math.max(0, p.pct));
      const height = Math.round((pct / 100) * (HEIGHT - 20));
      return { t: p.t, pct, x: Math.max(0, Math.round(((p.t - fromS) / span) * WIDTH)), y: HEIGHT - 14 - height, width, height };
    });
  return { bars, width: WIDTH, height: HEIGHT };
}

/** The machine's utilisation per bucket: the mean of its GPUs' average utilisation, or its CPU's when it has none. */
export function utilisationPoints(
  series: Array<{ gpu: number; metric: string; t: number[]; avg: number[] }>,
): Array<{ t: number; pct: number }> {
  const picked = series.filter((s) => s.metric === 'utilization' || (s.gpu === -1 && s.metric === 'cpu'));
  const sums = new Map<number, { sum: number; n: number }>();
  for (const s of picked)
    s.t.forEach((t, i) => {
      const at = sums.get(t) ?? { sum: 0, n: 0 };
      at.sum += s.avg[i] ?? 0;
      at.n += 1;
      sums.set(t, at);
    });
  return [...sums.entries()].sort((a, b) => a[0] - b[0]).map(([t, { sum, n }]) => ({ t, pct: Math.round((sum / n) * 10) / 10 }));
}
