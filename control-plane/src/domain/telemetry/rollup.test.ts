import type { TelemetrySample } from '@ark/shared';
import { describe, expect, it } from 'vitest';
import { bucketStartOf, HOST_DEVICE, mergeStats, rollUp } from './rollup.js';

const GPU = '00000000:01:00.0';
const now = new Date('2026-01-02T12:00:00.000Z');

describe('telemetry roll-up', () => {
  it('aligns buckets to 300 s', () => {
    expect(bucketStartOf(new Date('2026-01-02T11:04:59.999Z')).toISOString()).toBe('2026-01-02T11:00:00.000Z');
    expect(bucketStartOf(new Date('2026-01-02T11:05:00.000Z')).toISOString()).toBe('2026-01-02T11:05:00.000Z');
  });

  it('keeps min, max, sum and count per device and field; absent fields stay absent', () => {
    const samples: TelemetrySample[] = [
      { at: '2026-01-02T11:00:10.000Z', host: { load1: 1 }, devices: [{ pci_address: GPU, temperature_c: 50, utilization_pct: 10 }] },
      { at: '2026-01-02T11:00:20.000Z', devices: [{ pci_address: GPU, temperature_c: 70 }] },
      { at: '2026-01-02T11:05:00.000Z', devices: [{ pci_address: GPU, power_watts: 300 }] },
    ];
    const [first, second] = rollUp(samples, now);
    expect(first?.samples).toBe(2);
    expect(first?.stats.get(GPU)?.get('temperature_c')).toEqual({ min: 50, max: 70, sum: 120, count: 2 });
    expect(first?.stats.get(GPU)?.has('power_watts')).toBe(false);
    expect(first?.stats.get(HOST_DEVICE)?.get('load1')).toEqual({ min: 1, max: 1, sum: 1, count: 1 });
    expect(second?.samples).toBe(1);
    expect(second?.stats.get(GPU)?.get('power_watts')).toEqual({ min: 300, max: 300, sum: 300, count: 1 });
    expect(second?.stats.has(HOST_DEVICE)).toBe(false);
  });

  it('drops samples past the retention, too far ahead, or not finite', () => {
    const samples: TelemetrySample[] = [
      { at: '2025-12-31T11:00:00.000Z', devices: [{ pci_address: GPU, temperature_c: 1 }] },
      { at: '2026-01-02T12:10:00.000Z', devices: [{ pci_address: GPU, temperature_c: 2 }] },
      { at: '2026-01-02T11:59:00.000Z', devices: [{ pci_address: GPU, temperature_c: Number.NaN, fan_pct: 30 }] },
    ];
    const buckets = rollUp(samples, now);
    expect(buckets).toHaveLength(1);
    expect([...buckets[0]!.stats.get(GPU)!.keys()].sort()).toEqual(['#seen', 'fan_pct']);
  });

  it('merges exactly', () => {
    expect(mergeStats({ min: 1, max: 5, sum: 6, count: 2 }, { min: 0, max: 3, sum: 3, count: 1 })).toEqual({
      min: 0,
      max: 5,
      sum: 9,
      count: 3,
    });
  });
});
