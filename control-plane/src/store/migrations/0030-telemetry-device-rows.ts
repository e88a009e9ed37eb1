import { type Kysely, sql } from 'kysely';

// Telemetry roll-ups as one row per (machine, bucket, device) with every field's min, max, sum and count in columns,
// where 0005 kept one row per field: a batch of two GPUs and the host wrote about 20 rows, now 3, and every agent
// sends one a minute (issue 26: server CPU a frame). The rows of telemetry_stats move over, pivoted; a field never
// measured in a bucket has null columns, as it had no row. The field list is this migration's own, frozen here: a new
// field is a new migration.

const FIELDS = [
  'temperature_c',
  'utilization_pct',
  'power_watts',
  'fan_pct',
  'memory_used_bytes',
  'unified_memory_used_bytes',
  'cpu_utilization_pct',
  'load1',
  'disk_free_bytes',
  'uptime_s',
] as const;
/** The roll-up's presence field (domain/telemetry/rollup.ts, PRESENCE_FIELD): a row of value 1 a sample. */
const PRESENCE = '#seen';
const PARTS = [
  ['min', 'double precision'],
  ['max', 'double precision'],
  ['sum', 'double precision'],
  ['count', 'bigint'],
] as const;

export async function up(db: Kysely<any>): Promise<void> {
  let table = db.schema
    .createTable('telemetry_device_stats')
    .addColumn('machine_id', 'text', (c) => c.notNull())
    .addColumn('bucket_start', 'text', (c) => c.notNull())
    .addColumn('device', 'text', (c) => c.notNull())
    .addColumn('seen_count', 'bigint');
  for (const field of FIELDS) for (const [part, type] of PARTS) table = table.addColumn(`${field}_${part}`, type);
  await table.addPrimaryKeyConstraint('telemetry_device_stats_pk', ['machine_id', 'bucket_start', 'device']).execute();
  await db.schema.createIndex('telemetry_device_stats_start').on('telemetry_device_stats').column('bucket_start').execute();

  // (machine, bucket, device, field) was unique, so each max() below picks the one row of its field, or null.
  const columns = ['seen_count', ...FIELDS.flatMap((field) => PARTS.map(([part]) => `${field}_${part}`))];
  const pivots = [
    sql`max(case when field = ${sql.lit(PRESENCE)} then "count" end)`,
    ...FIELDS.flatMap((field) => PARTS.map(([part]) => sql`max(case when field = ${sql.lit(field)} then ${sql.ref(part)} end)`)),
  ];
  await sql`insert into telemetry_device_stats (machine_id, bucket_start, device, ${sql.join(columns.map((c) => sql.ref(c)))})
    select machine_id, bucket_start, device, ${sql.join(pivots)}
    from telemetry_stats group by machine_id, bucket_start, device`.execute(db);
  await db.schema.dropTable('telemetry_stats').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('telemetry_stats')
    .addColumn('machine_id', 'text', (c) => c.notNull())
    .addColumn('bucket_start', 'text', (c) => c.notNull())
    .addColumn('device', 'text', (c) => c.notNull())
    .addColumn('field', 'text', (c) => c.notNull())
    .addColumn('min', 'double precision', (c) => c.notNull())
    .addColumn('max', 'double precision', (c) => c.notNull())
    .addColumn('sum', 'double precision', (c) => c.notNull())
    .addColumn('count', 'bigint', (c) => c.notNull())
    .addPrimaryKeyConstraint('telemetry_stats_pk', ['machine_id', 'bucket_start', 'device', 'field'])
    .execute();
  await db.schema.createIndex('telemetry_stats_start').on('telemetry_stats').column('bucket_start').execute();
  const into = sql`insert into telemetry_stats (machine_id, bucket_start, device, field, "min", "max", "sum", "count")`;
  await sql`${into} select machine_id, bucket_start, device, ${sql.lit(PRESENCE)}, 1, 1, seen_count, seen_count
    from telemetry_device_stats where seen_count is not null`.execute(db);
  for (const field of FIELDS) {
    const [min, max, sum, count] = PARTS.map(([part]) => sql.ref(`${field}_${part}`));
    await sql`${into} select machine_id, bucket_start, device, ${sql.lit(field)}, ${min}, ${max}, ${sum}, ${count}
      from telemetry_device_stats where ${count} is not null`.execute(db);
  }
  await db.schema.dropTable('telemetry_device_stats').execute();
}
