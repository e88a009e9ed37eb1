import { describe, expect, it } from 'vitest';
import { dailyBars, timelineBars, utilisationPoints } from './charts.js';
import { telemetryCharts } from './telemetry.js';

describe('console charts', () => {
  it('sums amounts per UTC day over the window, zero days included, bars scaled to the largest day', () => {
    const now = new Date('2026-11-27T12:00:00Z');
    const chart = dailyBars(
      [
        { at: '2026-11-27T01:00:00Z', micro: '2000000' },
        { at: '2026-11-27T09:00:00Z', micro: '1000000' },
        { at: '2026-11-25T23:59:59Z', micro: '1500000' },
        { at: '2026-10-01T00:00:00Z', micro: '9000000' },
      ],
      7,
      now,
    );
    expect(chart.bars.map((b) => [b.day, b.micro])).toEqual([
      ['2026-11-21', 0n],
      ['2026-11-22', 0n],
      ['2026-11-23', 0n],
      ['2026-11-24', 0n],
      ['2026-11-25', 1_500_000n],
      ['2026-11-26', 0n],
      ['2026-11-27', 3_000_000n],
    ]);
    expect(chart.maxMicro).toBe(3_000_000n);
    expect(chart.totalMicro).toBe(4_500_000n);
    const tallest = chart.bars[6] as (typeof chart.bars)[number];
    const half = chart.bars[4] as (typeof chart.bars)[number];
    expect(tallest.height).toBe(chart.height - 20);
    expect(half.height).toBe(Math.round((chart.height - 20) / 2));
    expect(chart.bars[0]?.height).toBe(0);
  });

  it('charts a machine without GPUs by its CPU, load and memory', () => {
    const summary = (v: number) => ({ min: v, avg: v, max: v });
    const buckets = [
      {
        bucket: '2026-11-27T12:00:00Z',
        devices: [],
        host: { cpu_utilization_pct: summary(40), load1: summary(1.5), memory_used_bytes: summary(2 ** 31) },
      },
    ];
    const series = telemetryCharts({ manifest: { gpus: [] } }, buckets);
    expect(series.map((s) => [s.gpu, s.metric, s.latest?.avg])).toEqual([
      [-1, 'cpu', 40],
      [-1, 'load', 1.5],
      [-1, 'ram', 2],
    ]);
    // A machine with GPUs keeps its GPU charts only.
    const gpu = telemetryCharts({ manifest: { gpus: [{ pci_address: '0000:01:00.0', model: 'L4' }] } }, buckets);
    expect(gpu.every((s) => s.gpu === 0)).toBe(true);
  });

  it('draws a utilisation timeline: the mean of the GPUs per bucket, placed in time, as tall as its percentage', () => {
    const points = utilisationPoints([
      { gpu: 0, metric: 'utilization', t: [600, 900], avg: [100, 50] },
      { gpu: 1, metric: 'utilization', t: [600, 900], avg: [0, 50] },
      { gpu: 0, metric: 'power', t: [600], avg: [300] },
    ]);
    expect(points).toEqual([
      { t: 600, pct: 50 },
      { t: 900, pct: 50 },
    ]);
    expect(utilisationPoints([{ gpu: -1, metric: 'cpu', t: [600], avg: [25] }])).toEqual([{ t: 600, pct: 25 }]);
    const timeline = timelineBars(
      [
        { t: 600, pct: 100 },
        { t: 1050, pct: 0 },
      ],
      0,
      1200,
    );
    expect(timeline.bars.map((b) => [b.x, b.height])).toEqual([
      [350, timeline.height - 20],
      [613, 0],
    ]);
  });
});
