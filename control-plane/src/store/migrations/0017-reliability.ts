import type { Kysely } from 'kysely';

// Machine reliability (issue 10 item 2): each machine's online intervals, extended as heartbeats are written (one
// row update per machine per write, never one row per heartbeat), and the score the reliability worker computes from
// them, with the hold that keeps a machine under the floor out of new rentals.

export async function up(db: Kysely<any>): Promise<void> {
  // [started_at, ended_at]: the first and last heartbeat of a run with no gap longer than the liveness grace.
  await db.schema
    .createTable('machine_online_intervals')
    .addColumn('machine_id', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text', (c) => c.notNull())
    .addColumn('ended_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('machine_online_intervals_pk', ['machine_id', 'started_at'])
    .execute();
  await db.schema
    .createIndex('machine_online_intervals_ended')
    .on('machine_online_intervals')
    .columns(['machine_id', 'ended_at'])
    .execute();

  // One row per machine, replaced by each run of the worker; held is what keeps the machine out of new rentals.
  await db.schema
    .createTable('machine_reliability')
    .addColumn('machine_id', 'text', (c) => c.primaryKey())
    .addColumn('owner_account_id', 'text', (c) => c.notNull())
    /** The score in ten-thousandths (0..10000): "0.9876" on the wire. */
    .addColumn('score_e4', 'bigint', (c) => c.notNull())
    .addColumn('is_new', 'bigint', (c) => c.notNull())
    .addColumn('held', 'bigint', (c) => c.notNull())
    .addColumn('held_since', 'text')
    .addColumn('online_s', 'bigint', (c) => c.notNull())
    .addColumn('counted_s', 'bigint', (c) => c.notNull())
    .addColumn('penalized_jobs', 'bigint', (c) => c.notNull())
    .addColumn('window_from', 'text', (c) => c.notNull())
    // The machine's first heartbeat as the worker first saw it: its history starts there, not at enrollment.
    .addColumn('history_from', 'text')
    .addColumn('computed_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('machine_reliability_held').on('machine_reliability').columns(['held']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('machine_reliability').execute();
  await db.schema.dropTable('machine_online_intervals').execute();
}
