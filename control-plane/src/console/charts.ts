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
