import type { Kysely } from 'kysely';

// Verified readiness (issue 24 item 1): a job whose agent reported it ready waits in STARTING with one row here until
// the control plane has checked its endpoint. The row is the work item: any replica claims it for a while
// (claimed_by, claimed_until), so one verification runs at a time, and a replica that dies mid-check leaves a claim
// that simply runs out; a restarted control plane finds the row again. The machine keeps the last reason a
// verification failed, shown to its host with the agent's own problems until a later job on it verifies.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('job_readiness')
    .addColumn('job_id', 'text', (c) => c.primaryKey())
    .addColumn('machine_id', 'text', (c) => c.notNull())
    /** The fence the readiness was reported under: a verification under an older fence moves nothing. */
    .addColumn('fence', 'bigint', (c) => c.notNull())
    /** The agent's ready instant (clamped to reservation..now when it was applied). */
    .addColumn('reported_at', 'text', (c) => c.notNull())
    /** JSON: the evidence the agent sent with its readiness (kept for the RUNNING event and the qualification). */
    .addColumn('evidence', 'text', (c) => c.notNull().defaultTo('{}'))
    .addColumn('attempts', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('next_attempt_at', 'text', (c) => c.notNull())
    .addColumn('claimed_by', 'text')
    .addColumn('claimed_until', 'text')
    .addColumn('last_error', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('job_readiness_due').on('job_readiness').column('next_attempt_at').execute();
  await db.schema.alterTable('machines').addColumn('readiness_problem', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('machines').dropColumn('readiness_problem').execute();
  await db.schema.dropTable('job_readiness').execute();
}
