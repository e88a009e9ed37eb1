import type { TelemetrySample } from '@ark/shared';
import { describe, expect, it } from 'vitest';
import { rollUp } from '../domain/telemetry/rollup.js';
import { telemetryBucketView } from './machines.js';

const GPU = '00000000:01:00.0';
const now = new Date('2026-01-02T12:00:00.000Z');

describe('telemetry views', () => {
  it('shows devices by PCI address with min, avg and max; fields never measured and an unmeasured host are left out', () => {
    const samples: TelemetrySample[] = [
      { at: '2026-01-02T11:00:10.000Z', host: { load1: 1 }, devices: [{ pci_address: GPU, temperature_c: 50, utilization_pct: 10 }] },
      { at: '2026-01-02T11:00:20.000Z', devices: [{ pci_address: GPU, temperature_c: 70 }] },
      { at: '2026-01-02T11:05:00.000Z', devices: [{ pci_address: GPU, power_watts: 300 }] },
    ];
    const [first, second] = rollUp(samples, now);
    expect(telemetryBucketView(first!)).toEqual({
      bucket: '2026-01-02T11:00:00.000Z',
      samples: 2,
      devices: [{ pci_address: GPU, temperature_c: { min: 50, avg: 60, max: 70 }, utilization_pct: { min: 10, avg: 10, max: 10 } }],
      host: { load1: { min: 1, avg: 1, max: 1 } },
    });
    const secondView = telemetryBucketView(second!);
    expect(secondView).toEqual({
      bucket: '2026-01-02T11:05:00.000Z',
      samples: 1,
      devices: [{ pci_address: GPU, power_watts: { min: 300, avg: 300, max: 300 } }],
    });
    expect(secondView).not.toHaveProperty('host');
  });
});
