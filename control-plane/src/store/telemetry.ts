import { TELEMETRY_RETENTION_S } from '@ark/shared';
import { type BucketContribution, bucketStartOf, type FieldStats } from '../domain/telemetry/rollup.js';
import { iso } from '../clock.js';
import { rowsStatement, runSql } from './compiled.js';
import { dialectOf, type Executor, type Store } from './db.js';

// Telemetry buckets: samples per (machine, bucket) and min/max/sum/count per (machine, bucket, device, field).
// Upserts merge in the database, so batches (and replicas) never read-modify-write.

/** Merges a batch's contributions into the stored buckets. Call it inside the batch's transaction. */
export async function mergeTelemetry(db: Executor, machineId: string, contributions: BucketContribution[]): Promise<void> {
  await mergeTelemetryOfMachines(db, [{ machineId, contributions }]);
}

const byKey = ([a]: [string, unknown], [b]: [string, unknown]) => (a < b ? -1 : a > b ? 1 : 0);

/** Rows per upsert statement: stats rows carry 8 parameters each, far below either store's bound. */
const ROWS_PER_STATEMENT = 1000;

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
  const stats = new Map<string, { machine_id: string; bucket_start: string; device: string; field: string } & FieldStats>();
  for (const { machineId, contributions } of batches) {
    for (const bucket of contributions) {
      const start = iso(bucket.bucketStart);
      const bucketKey = `${machineId}\0${start}`;
      const stored = buckets.get(bucketKey);
      if (stored) stored.samples += BigInt(bucket.samples);
      else buckets.set(bucketKey, { machine_id: machineId, bucket_start: start, samples: BigInt(bucket.samples) });
      for (const [device, fields] of bucket.stats) {
        for (const [field, s] of fields) {
          const key = `${bucketKey}\0${device}\0${field}`;
          const merged = stats.get(key);
          if (!merged) {
            stats.set(key, {
              machine_id: machineId,
              bucket_start: start,
              device,
              field,
              min: s.min,
              max: s.max,
              sum: s.sum,
              count: s.count,
            });
            continue;
          }
          merged.min = Math.min(merged.min, s.min);
          merged.max = Math.max(merged.max, s.max);
          merged.sum += s.sum;
          merged.count += s.count;
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
  const statRows = [...stats].sort(byKey).map(([, row]) => row);
  for (let i = 0; i < statRows.length; i += ROWS_PER_STATEMENT) {
    const chunk = statRows.slice(i, i + ROWS_PER_STATEMENT);
    const parameters: unknown[] = [];
    for (const r of chunk) parameters.push(r.machine_id, r.bucket_start, r.device, r.field, r.min, r.max, r.sum, BigInt(r.count));
    await runSql(db, upsertStatsSql(dialect, chunk.length), parameters);
  }
}

// The upserts as SQL text, not built by Kysely per batch: every telemetry batch runs them, and building a VALUES list
// of 20-40 rows cost more than SQLite takes to write them (store/compiled.ts). The two-argument min/max of SQLite
// are least/greatest on Postgres.
const upsertBucketsSql = rowsStatement(
  3,
  (_dialect, values) => `insert into telemetry_buckets (machine_id, bucket_start, samples) values ${values}
   on conflict (machine_id, bucket_start) do update set samples = telemetry_buckets.samples + excluded.samples`,
);

const upsertStatsSql = rowsStatement(8, (dialect, values) => {
  const [least, greatest] = dialect === 'postgres' ? ['least', 'greatest'] : ['min', 'max'];
  return `insert into telemetry_stats (machine_id, bucket_start, device, field, "min", "max", "sum", "count") values ${values}
   on conflict (machine_id, bucket_start, device, field) do update set
     "min" = ${least}(telemetry_stats."min", excluded."min"),
     "max" = ${greatest}(telemetry_stats."max", excluded."max"),
     "sum" = telemetry_stats."sum" + excluded."sum",
     "count" = telemetry_stats."count" + excluded."count"`;
});

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
  const stats = await db
    .selectFrom('telemetry_stats')
    .select(['bucket_start', 'device', 'field', 'min', 'max', 'sum', 'count'])
    .where('machine_id', '=', machineId)
    .where('bucket_start', '>=', since)
    .execute();
  const byBucket = new Map<string, Map<string, Map<string, FieldStats>>>();
  for (const row of stats) {
    let devices = byBucket.get(row.bucket_start);
    if (!devices) {
      devices = new Map();
      byBucket.set(row.bucket_start, devices);
    }
    let fields = devices.get(row.device);
    if (!fields) {
      fields = new Map();
      devices.set(row.device, fields);
    }
    fields.set(row.field, { min: Number(row.min), max: Number(row.max), sum: Number(row.sum), count: Number(row.count) });
  }
  return buckets
    .filter((b) => b.samples > 0n)
    .map((b) => ({ bucketStart: new Date(b.bucket_start), samples: Number(b.samples), stats: byBucket.get(b.bucket_start) ?? new Map() }));
}

/** Deletes buckets that ended before the retention horizon (48 h); the one the horizon falls in stays. Returns the rows removed. */
export async function purgeTelemetryBefore(store: Store, now: Date): Promise<number> {
  const horizon = iso(bucketStartOf(new Date(now.getTime() - TELEMETRY_RETENTION_S * 1000)));
  return store.db.transaction().execute(async (trx) => {
    const stats = await trx.deleteFrom('telemetry_stats').where('bucket_start', '<', horizon).executeTakeFirst();
    const buckets = await trx.deleteFrom('telemetry_buckets').where('bucket_start', '<', horizon).executeTakeFirst();
    return Number(stats.numDeletedRows) + Number(buckets.numDeletedRows);
  });
}
