import { type Kysely, sql } from 'kysely';

// Earnings mature (issue 24 item 4): each host charge posted to pending earnings is a lot that becomes payable at its
// own time (charge time + ARK_EARNINGS_MATURITY_S). `remaining_micro` is what is still pending of it: an automatic
// credit (item 3) takes from it, maturity moves it to payable and sets `matured_at` (once: the worker's update is a
// compare-and-set on `matured_at is null`). The host's pending balance always equals the sum of remaining amounts of
// its unmatured lots; the ledger verification checks it.
//
// Automatic credits (issue 24 item 3): one row per job at most (the primary key), written in the transaction that
// moves the job to FAILED, so a credit is posted exactly once whatever crashes.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('pending_earnings')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('host_account_id', 'text', (c) => c.notNull())
    .addColumn('job_id', 'text', (c) => c.notNull())
    .addColumn('amount_micro', 'bigint', (c) => c.notNull())
    .addColumn('remaining_micro', 'bigint', (c) => c.notNull())
    .addColumn('charged_at', 'text', (c) => c.notNull())
    .addColumn('matures_at', 'text', (c) => c.notNull())
    .addColumn('matured_at', 'text')
    .addCheckConstraint('pending_earnings_amounts', sql`amount_micro > 0 and remaining_micro >= 0 and remaining_micro <= amount_micro`)
    .execute();
  // The worker's due lots, and a host's open lots (the earnings view, credits, the verification).
  await db.schema.createIndex('pending_earnings_due').on('pending_earnings').columns(['matured_at', 'matures_at']).execute();
  await db.schema.createIndex('pending_earnings_host').on('pending_earnings').columns(['host_account_id', 'matured_at']).execute();
  await db.schema.createIndex('pending_earnings_job').on('pending_earnings').column('job_id').execute();

  await db.schema
    .createTable('job_credits')
    .addColumn('job_id', 'text', (c) => c.primaryKey())
    .addColumn('renter_account_id', 'text', (c) => c.notNull())
    .addColumn('host_account_id', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('healthy_at', 'text')
    .addColumn('credit_micro', 'bigint', (c) => c.notNull())
    .addColumn('from_pending_micro', 'bigint', (c) => c.notNull())
    .addColumn('from_payable_micro', 'bigint', (c) => c.notNull())
    .addColumn('from_platform_micro', 'bigint', (c) => c.notNull())
    .addColumn('from_fees_micro', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addCheckConstraint(
      'job_credits_parts',
      sql`credit_micro = from_pending_micro + from_payable_micro + from_platform_micro + from_fees_micro
          and from_pending_micro >= 0 and from_payable_micro >= 0 and from_platform_micro >= 0 and from_fees_micro >= 0`,
    )
    .execute();
  await db.schema.createIndex('job_credits_renter').on('job_credits').columns(['renter_account_id', 'created_at']).execute();
  await db.schema.createIndex('job_credits_host').on('job_credits').columns(['host_account_id', 'created_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('job_credits').execute();
  await db.schema.dropTable('pending_earnings').execute();
}
