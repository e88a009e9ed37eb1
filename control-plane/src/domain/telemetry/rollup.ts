import { type GpuReading, type HostReading, TELEMETRY_BUCKET_S, TELEMETRY_RETENTION_S, type TelemetrySample } from '@ark/shared';

// Telemetry roll-up into 300-second buckets. Each (bucket, device, field) keeps min, max, sum and count, so
// contributions from any number of batches merge exactly (min of mins, max of maxes, sums and counts added)
// and the average is only computed when read. A field never measured in a bucket has no row, so it is absent.

export const BUCKET_MS = TELEMETRY_BUCKET_S * 1000;
/** The host's readings are kept under this device key; PCI addresses never start with '#'. */
export const HOST_DEVICE = '#host';
/** A row with this field records that a device appeared in the bucket, measured or not. */
export const PRESENCE_FIELD = '#seen';
/** Samples stamped further ahead of the control plane's clock than this are dropped (a wrong agent clock). */
export const FUTURE_SKEW_MS = 5 * 60_000;

export const GPU_FIELDS = [
  'temperature_c',
  'utilization_pct',
  'power_watts',
  'fan_pct',
  'memory_used_bytes',
  'unified_memory_used_bytes',
] as const;
export const HOST_FIELDS = ['cpu_utilization_pct', 'load1', 'memory_used_bytes', 'disk_free_bytes', 'uptime_s'] as const;

export interface FieldStats {
  min: number;
  max: number;
  sum: number;
  count: number;
}

/** One batch's contribution to one bucket; read back, a stored bucket (its wire view is in views/machines.ts). */
export interface BucketContribution {
  bucketStart: Date;
  samples: number;
  /** device key -> field -> stats. */
  stats: Map<string, Map<string, FieldStats>>;
}

export function bucketStartOf(at: Date): Date {
  const ms = at.getTime();
  return new Date(ms - (((ms % BUCKET_MS) + BUCKET_MS) % BUCKET_MS));
}

export function mergeStats(a: FieldStats, b: FieldStats): FieldStats {
  return { min: Math.min(a.min, b.min), max: Math.max(a.max, b.max), sum: a.sum + b.sum, count: a.count + b.count };
}

/** Adds one reading to a field's stats, in place: the stats are this roll-up's own until it returns. */
function add(fields: Map<string, FieldStats>, field: string, value: number): void {
  const stats = fields.get(field);
  if (stats === undefined) {
    fields.set(field, { min: value, max: value, sum: value, count: 1 });
    return;
  }
  if (value < stats.min) stats.min = value;
  if (value > stats.max) stats.max = value;
  stats.sum += value;
  stats.count += 1;
}

function fieldsOf(stats: Map<string, Map<string, FieldStats>>, device: string): Map<string, FieldStats> {
  let fields = stats.get(device);
  if (!fields) {
    fields = new Map();
    stats.set(device, fields);
  }
  return fields;
}

/**
 * Groups a batch's samples into bucket contributions. Samples older than the retention or too far in the
 * future are dropped; non-finite numbers are treated as not measured.
 */
export function rollUp(samples: TelemetrySample[], now: Date): BucketContribution[] {
  const oldest = now.getTime() - TELEMETRY_RETENTION_S * 1000;
  const newest = now.getTime() + FUTURE_SKEW_MS;
  const buckets = new Map<number, BucketContribution>();
  for (const sample of samples) {
    const at = new Date(sample.at);
    const t = at.getTime();
    if (Number.isNaN(t) || t < oldest || t > newest) continue;
    const start = bucketStartOf(at);
    let bucket = buckets.get(start.getTime());
    if (!bucket) {
      bucket = { bucketStart: start, samples: 0, stats: new Map() };
      buckets.set(start.getTime(), bucket);
    }
    bucket.samples += 1;
    for (const device of sample.devices) {
      const fields = fieldsOf(bucket.stats, device.pci_address);
      add(fields, PRESENCE_FIELD, 1);
      for (const field of GPU_FIELDS) {
        const value = (device as GpuReading)[field];
        if (typeof value === 'number' && Number.isFinite(value)) add(fields, field, value);
      }
    }
    if (sample.host) {
      const fields = fieldsOf(bucket.stats, HOST_DEVICE);
      for (const field of HOST_FIELDS) {
        const value = (sample.host as HostReading)[field];
        if (typeof value === 'number' && Number.isFinite(value)) add(fields, field, value);
      }
      if (fields.size === 0) bucket.stats.delete(HOST_DEVICE);
    }
  }
  return [...buckets.values()].sort((a, b) => a.bucketStart.getTime() - b.bucketStart.getTime());
}
