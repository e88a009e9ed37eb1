import type { GpuReading, HostReading, TelemetrySample } from '@ark/shared';
import type { GpuSample, HostSample } from '../collectors/index.js';

// Readings travel every minute for the life of the machine: two decimals are more than any summary needs, and
// shorter numbers keep the idle upstream small.
const round2 = (value: number) => Math.round(value * 100) / 100;

function put<T extends object>(target: T, key: keyof T, value: number | undefined, round: (value: number) => number): void {
  if (value !== undefined && Number.isFinite(value)) (target as Record<keyof T, number>)[key] = round(value);
}

export function gpuReading(sample: GpuSample): GpuReading {
  const reading: GpuReading = { pci_address: sample.pci_address };
  put(reading, 'temperature_c', sample.temperature_c, round2);
  put(reading, 'utilization_pct', sample.utilization_pct, round2);
  put(reading, 'power_watts', sample.power_watts, round2);
  put(reading, 'fan_pct', sample.fan_pct, round2);
  put(reading, 'memory_used_bytes', sample.memory_used_bytes, Math.round);
  put(reading, 'unified_memory_used_bytes', sample.unified_memory_used_bytes, Math.round);
  return reading;
}

/** Undefined when nothing was measured, so the sample leaves `host` out rather than sending an empty object. */
export function hostReading(sample: HostSample): HostReading | undefined {
  const reading: HostReading = {};
  put(reading, 'cpu_utilization_pct', sample.cpu_utilization_pct, round2);
  put(reading, 'load1', sample.load1, round2);
  put(reading, 'memory_used_bytes', sample.memory_used_bytes, Math.round);
  put(reading, 'disk_free_bytes', sample.disk_free_bytes, Math.round);
  put(reading, 'uptime_s', sample.uptime_s, Math.round);
  return Object.keys(reading).length === 0 ? undefined : reading;
}

/** At most 64 devices per sample (the schema's bound); a larger chassis reports its first 64. */
export const MAX_DEVICES_PER_SAMPLE = 64;

export function telemetrySample(at: Date, host: HostSample, gpus: readonly GpuSample[]): TelemetrySample {
  const sample: TelemetrySample = { at: at.toISOString(), devices: gpus.slice(0, MAX_DEVICES_PER_SAMPLE).map(gpuReading) };
  const hostPart = hostReading(host);
  if (hostPart !== undefined) sample.host = hostPart;
  return sample;
}
