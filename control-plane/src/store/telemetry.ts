import { TELEMETRY_RETENTION_S } from '@ark/shared';
import {
  type BucketContribution,
  bucketStartOf,
  type FieldStats,
  GPU_FIELDS,
  HOST_FIELDS,
  mergeStats,
  PRESENCE_FIELD,
} from '../domain/telemetry/rollup.js';
import { iso } from '../clock.js';
import { rowsStatement, runSql } from './compiled.js';
import { dialectOf, type Executor, type Store } from './db.js';
import type { TelemetryStoredField } from './tables/hosts.js';

// Telemetry buckets: samples per (machine, bucket), and per (machine, bucket, device) one row with every field's
// min/max/sum/count in columns (migration 0030; the presence field is the row's seen_count). Upserts merge in the
// database, so batches (and replicas) never read-modify-write.

/** Merges a batch's contributions into the stored buckets. Call it inside the batch's transaction. */
export async function mergeTelemetry(db: Executor, machineId: string, contributions: BucketContribution[]): Promise<void> {
  await mergeTelemetryOfMachines(db, [{ machineId, contributions }]);
}

const byKey = ([a]: [string, unknown], [b]: [string, unknown]) => (a < b ? -1 : a > b ? 1 : 0);

/** Rows per upsert statement: a device row carries 44 parameters, so 500 stay below SQLite's bound of 32,766. */
const ROWS_PER_STATEMENT = 500;

/** The fields a device row has columns for (migration 0030), each once: memory_used_bytes is a GPU's and the host's. */
const TELEMETRY_STORED_FIELDS: readonly TelemetryStoredField[] = [...new Set([...GPU_FIELDS, ...HOST_FIELDS])];

/** Parameters of a device row: machine, bucket, device, seen_count, then min, max, sum and count of each field. */
const DEVICE_ROW_PARAMETERS = 4 + TELEMETRY_STORED_FIELDS.length * 4;

interface DeviceRow {
  machineId: string;
  bucketStart: string;
  device: string;
  fields: Map<string, FieldStats>;
}

/**
 * Merges the batches of several machines (the gateway's group of telemetry messages, applied together) in two
 * upserts (or a few, past ROWS_PER_STATEMENT rows): contributions to one key are merged here first, since one
 * PostgreSQL upsert may not touch a row twice. The stored result is what merging them one by one would give.
 */
export async function mergeTelemetryOfMachines(
  db: Executor,
  batches: ReadonlyArray<{ machineId: string; contributions: readonly BucketContribution[] }>,
): Promise<void> {
  const buckets = new Map<string, { machine_id: string; bucket_start: string; samples: bigint }>();
  const devices = new Map<string, DeviceRow>();
  for (const { machineId, contributions } of batches) {
    for (const bucket of contributions) {
      const start = iso(bucket.bucketStart);
      const bucketKey = `${machineId}\0${start}`;
      const stored = buckets.get(bucketKey);
      if (stored) stored.samples += BigInt(bucket.samples);
      else buckets.set(bucketKey, { machine_id: machineId, bucket_start: start, samples: BigInt(bucket.samples) });
      for (const [device, fields] of bucket.stats) {
        const key = `${bucketKey}\0${device}`;
        const merged = devices.get(key);
        if (!merged) {
          devices.set(key, { machineId, bucketStart: start, device, fields: new Map(fields) });
          continue;
        }
        for (const [field, s] of fields) {
          const before = merged.fields.get(field);
          merged.fields.set(field, before ? mergeStats(before, s) : s);
        }
      }
    }
  }
  // Rows in key order: two groups upserting the same keys (two lanes, or two replicas) lock them in one order.
  const dialect = dialectOf(db);
  const bucketRows = [...buckets].sort(byKey).map(([, row]) => row);
  for (let i = 0; i < bucketRows.length; i += ROWS_PER_STATEMENT) {
    const chunk = bucketRows.slice(i, i + ROWS_PER_STATEMENT);
    const parameters: unknown[] = [];
    for (const row of chunk) parameters.push(row.machine_id, row.bucket_start, row.samples);
    await runSql(db, upsertBucketsSql(dialect, chunk.length), parameters);
  }
  const deviceRows = [...devices].sort(byKey).map(([, row]) => row);
  for (let i = 0; i < deviceRows.length; i += ROWS_PER_STATEMENT) {
    const chunk = deviceRows.slice(i, i + ROWS_PER_STATEMENT);
    const parameters: unknown[] = [];
    for (const row of chunk) pushDeviceRow(parameters, row);
    await runSql(db, upsertDevicesSql(dialect, chunk.length), parameters);
  }
}

function pushDeviceRow(parameters: unknown[], row: DeviceRow): void {
  const seen = row.fields.get(PRESENCE_FIELD);
  parameters.push(row.machineId, row.bucketStart, row.device, seen ? BigInt(seen.count) : null);
  let stored = seen ? 1 : 0;
  for (const field of TELEMETRY_STORED_FIELDS) {
    const s = row.fields.get(field);
    if (s) {
      parameters.push(s.min, s.max, s.sum, BigInt(s.count));
      stored += 1;
    } else parameters.push(null, null, null, null);
  }
  if (stored !== row.fields.size) throw new Error(`telemetry of device ${row.device} holds a field with no stored columns`);
}

// The upserts as SQL text, not built by Kysely per batch: every telemetry batch runs them, and building a VALUES list
// cost more than SQLite takes to write it (store/compiled.ts).
const upsertBucketsSql = rowsStatement(
  3,
  (_dialect, values) => `insert into telemetry_buckets (machine_id, bucket_start, samples) values ${values}
   on conflict (machine_id, bucket_start) do update set samples = telemetry_buckets.samples + excluded.samples`,
);

// A field measured on one side only keeps that side's figures: Postgres's least/greatest skip nulls; SQLite's
// two-argument min/max answer null, and coalesce falls back to whichever side is not. Sums and counts likewise.
const upsertDevicesSql = rowsStatement(DEVICE_ROW_PARAMETERS, (dialect, values) => {
  const [least, greatest] = dialect === 'postgres' ? ['least', 'greatest'] : ['min', 'max'];
  const merge = (column: string, combine: (a: string, b: string) => string) => {
    const [a, b] = [`telemetry_device_stats.${column}`, `excluded.${column}`];
    return `${column} = coalesce(${combine(a, b)}, ${a}, ${b})`;
  };
  const add = (a: string, b: string) => `${a} + ${b}`;
  const sets = [merge('seen_count', add)];
  for (const field of TELEMETRY_STORED_FIELDS) {
    sets.push(
      merge(`${field}_min`, (a, b) => `${least}(${a}, ${b})`),
      merge(`${field}_max`, (a, b) => `${greatest}(${a}, ${b})`),
      merge(`${field}_sum`, add),
      merge(`${field}_count`, add),
    );
  }
  return `insert into telemetry_device_stats (machine_id, bucket_start, device, ${STORED_COLUMNS.join(', ')}) values ${values}
   on conflict (machine_id, bucket_start, device) do update set ${sets.join(', ')}`;
});

const STORED_COLUMNS = ['seen_count', ...TELEMETRY_STORED_FIELDS.flatMap((f) => [`${f}_min`, `${f}_max`, `${f}_sum`, `${f}_count`])];

/** Buckets overlapping the last `windowS` seconds, oldest first. */
export async function readTelemetry(db: Executor, machineId: string, windowS: number, now: Date): Promise<BucketContribution[]> {
  const since = iso(bucketStartOf(new Date(now.getTime() - windowS * 1000)));
  const buckets = await db
    .selectFrom('telemetry_buckets')
    .select(['bucket_start', 'samples'])
    .where('machine_id', '=', machineId)
    .where('bucket_start', '>=', since)
    .orderBy('bucket_start')
    .execute();
  if (buckets.length === 0) return [];
  const rows = await db
    .selectFrom('telemetry_device_stats')
    .selectAll()
    .where('machine_id', '=', machineId)
    .where('bucket_start', '>=', since)
    .execute();
  const byBucket = new Map<string, Map<string, Map<string, FieldStats>>>();
  for (const row of rows) {
    let devices = byBucket.get(row.bucket_start);
    if (!devices) {
      devices = new Map();
      byBucket.set(row.bucket_start, devices);
    }
    const fields = new Map<string, FieldStats>();
    if (row.seen_count !== null) {
      const seen = Number(row.seen_count);
      fields.set(PRESENCE_FIELD, { min: 1, max: 1, sum: seen, count: seen });
    }
    for (const field of TELEMETRY_STORED_FIELDS) {
      const count = row[`${field}_count`];
      if (count === null) continue;
      fields.set(field, {
        min: Number(row[`${field}_min`]),
        max: Number(row[`${field}_max`]),
        sum: Number(row[`${field}_sum`]),
        count: Number(count),
      });
    }
    devices.set(row.device, fields);
  }
  return buckets
    .filter((b) => b.samples > 0n)
    .map((b) => ({ bucketStart: new Date(b.bucket_start), samples: Number(b.samples), stats: byBucket.get(b.bucket_start) ?? new Map() }));
}

/** Deletes buckets that ended before the retention horizon (48 h); the one the horizon falls in stays. Returns the rows removed. */
export async function purgeTelemetryBefore(store: Store, now: Date): Promise<number> {
  const horizon = iso(bucketStartOf(new Date(now.getTime() - TELEMETRY_RETENTION_S * 1000)));
  return store.db.transaction().execute(async (trx) => {
    const stats = await trx.deleteFrom('telemetry_device_stats').where('bucket_start', '<', horizon).executeTakeFirst();
    const buckets = await trx.deleteFrom('telemetry_buckets').where('bucket_start', '<', horizon).executeTakeFirst();
    return Number(stats.numDeletedRows) + Number(buckets.numDeletedRows);
  });
}
