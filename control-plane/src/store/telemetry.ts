import { TELEMETRY_RETENTION_S } from '@ark/shared';
import { sql } from 'kysely';
import { type BucketContribution, bucketStartOf, type FieldStats } from '../domain/telemetry/rollup.js';
import { iso } from '../clock.js';
import { type Executor, isPostgres, type Store } from './db.js';

// Telemetry buckets: samples per (machine, bucket) and min/max/sum/count per (machine, bucket, device, field).
// Upserts merge in the database, so batches (and replicas) never read-modify-write.

/** Merges a batch's contributions into the stored buckets. Call it inside the batch's transaction. */
export async function mergeTelemetry(db: Executor, machineId: string, contributions: BucketContribution[]): Promise<void> {
  // The two-argument min/max of SQLite are least/greatest on Postgres.
  const postgres = isPostgres(db);
  const least = sql.raw(postgres ? 'least' : 'min');
  const greatest = sql.raw(postgres ? 'greatest' : 'max');
  for (const bucket of contributions) {
    const start = iso(bucket.bucketStart);
    await db
      .insertInto('telemetry_buckets')
      .values({ machine_id: machineId, bucket_start: start, samples: BigInt(bucket.samples) })
      .onConflict((oc) =>
        oc.columns(['machine_id', 'bucket_start']).doUpdateSet({ samples: sql<bigint>`telemetry_buckets.samples + excluded.samples` }),
      )
      .execute();
    const rows = [];
    for (const [device, fields] of bucket.stats) {
      for (const [field, s] of fields) {
        rows.push({
          machine_id: machineId,
          bucket_start: start,
          device,
          field,
          min: s.min,
          max: s.max,
          sum: s.sum,
          count: BigInt(s.count),
        });
      }
    }
    if (rows.length === 0) continue;
    await db
      .insertInto('telemetry_stats')
      .values(rows)
      .onConflict((oc) =>
        oc.columns(['machine_id', 'bucket_start', 'device', 'field']).doUpdateSet({
          min: sql<number>`${least}(telemetry_stats.min, excluded.min)`,
          max: sql<number>`${greatest}(telemetry_stats.max, excluded.max)`,
          sum: sql<number>`telemetry_stats.sum + excluded.sum`,
          count: sql<bigint>`telemetry_stats.count + excluded.count`,
        }),
      )
      .execute();
  }
}

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
