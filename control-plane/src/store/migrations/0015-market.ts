import type { Kysely } from 'kysely';

// Host market statistics (issue 10 item 1): the listing history they need (one row per interval an offer was
// listed; offer versions and jobs already keep the rest) and the worker's precomputed buckets, one per
// (window in days, GPU model), replaced whole by each run, so a request is a cheap read.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('offer_listings')
    .addColumn('machine_id', 'text', (c) => c.notNull())
    .addColumn('listed_from', 'text', (c) => c.notNull())
    .addColumn('listed_until', 'text')
    .addPrimaryKeyConstraint('offer_listings_pk', ['machine_id', 'listed_from'])
    .execute();
  // Offers listed before this migration: their interval starts at their last change (the best the store knows).
  await db
    .insertInto('offer_listings')
    .columns(['machine_id', 'listed_from', 'listed_until'])
    .expression(
      db
        .selectFrom('offers')
        .select(['machine_id', 'updated_at as listed_from'])
        .select((eb) => eb.val(null).as('listed_until'))
        .where('listed', '=', 1),
    )
    .execute();

  await db.schema
    .createTable('market_snapshots')
    .addColumn('id', 'integer', (c) => c.primaryKey())
    .addColumn('computed_at', 'text', (c) => c.notNull())
    .addColumn('min_sample_size', 'integer', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('market_stats')
    .addColumn('window_days', 'integer', (c) => c.notNull())
    .addColumn('gpu_model', 'text', (c) => c.notNull())
    .addColumn('sample_size', 'bigint', (c) => c.notNull())
    .addColumn('listed_gpus', 'bigint')
    .addColumn('allocated_gpus', 'bigint')
    .addColumn('utilization_pct', 'bigint')
    .addColumn('fill_rate_pct', 'bigint')
    .addColumn('rental_sample_size', 'bigint')
    .addColumn('rate_p10_micro', 'bigint')
    .addColumn('rate_median_micro', 'bigint')
    .addColumn('rate_p90_micro', 'bigint')
    .addColumn('median_time_to_first_rental_s', 'bigint')
    .addPrimaryKeyConstraint('market_stats_pk', ['window_days', 'gpu_model'])
    .execute();

  // Each host's own median listed rate per model, from the shortest window it holds for (sets only grow with the
  // window, so one row per change): a request reads one row per model instead of the host's machines.
  await db.schema
    .createTable('market_host_rates')
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('gpu_model', 'text', (c) => c.notNull())
    .addColumn('from_window_days', 'integer', (c) => c.notNull())
    .addColumn('rate_micro', 'bigint')
    .addPrimaryKeyConstraint('market_host_rates_pk', ['account_id', 'gpu_model', 'from_window_days'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('market_host_rates').execute();
  await db.schema.dropTable('market_stats').execute();
  await db.schema.dropTable('market_snapshots').execute();
  await db.schema.dropTable('offer_listings').execute();
}
