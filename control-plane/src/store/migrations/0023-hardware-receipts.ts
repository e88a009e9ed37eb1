import { type Kysely, sql } from 'kysely';

// Hardware receipts (issue 24 item 2): every verified self-test receipt a machine signed, kept exactly as signed so
// anyone can check it again, and one row per machine with its latest score and whether a contradicting receipt keeps
// it off the market.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('hardware_receipts')
    .addColumn('machine_id', 'text', (c) => c.notNull())
    // Per machine, from 1: a receipt at or below the highest stored is a replay, refused.
    .addColumn('receipt_seq', 'bigint', (c) => c.notNull())
    // The canonical JSON exactly as the agent signed it, and its base64 ed25519 signature.
    .addColumn('receipt', 'text', (c) => c.notNull())
    .addColumn('signature', 'text', (c) => c.notNull())
    .addColumn('trigger', 'text', (c) => c.notNull())
    .addColumn('ok', 'bigint', (c) => c.notNull())
    // hardwareReceiptScore of the signed figures; null without a benchmark or for a failed run.
    .addColumn('score', 'double precision')
    .addColumn('measured_at', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('hardware_receipts_pk', ['machine_id', 'receipt_seq'])
    .execute();

  await db.schema
    .createTable('machine_verification')
    .addColumn('machine_id', 'text', (c) => c.primaryKey())
    .addColumn('owner_account_id', 'text', (c) => c.notNull())
    .addColumn('last_receipt_seq', 'bigint', (c) => c.notNull())
    // From the latest ok receipt with a benchmark: what offers show and min_score filters on.
    .addColumn('score', 'double precision')
    .addColumn('verified_at', 'text')
    // 1 while the latest receipt contradicts the declared hardware: the machine is not offered to new rentals.
    .addColumn('unlisted', 'bigint', (c) => c.notNull())
    // JSON array of {code, message}: why, as told to the host.
    .addColumn('contradictions', 'text', (c) => c.notNull())
    .addColumn('unlisted_since', 'text')
    // The support case opened for the host at the first unlisting (messages are added to it after).
    .addColumn('ticket_id', 'text')
    // When the daily self-test is next asked; moved forward by compare-and-set, so one replica's worker claims it.
    .addColumn('next_selftest_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('machine_verification_unlisted').on('machine_verification').columns(['unlisted']).execute();
  await db.schema.createIndex('machine_verification_due').on('machine_verification').columns(['next_selftest_at']).execute();
  // Machines enrolled before receipts existed: nothing measured yet, a self-test due at once.
  await sql`insert into machine_verification
      (machine_id, owner_account_id, last_receipt_seq, score, verified_at, unlisted, contradictions, unlisted_since,
       ticket_id, next_selftest_at, updated_at)
    select id, owner_account_id, 0, null, null, 0, '[]', null, null, created_at, created_at from machines`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('machine_verification').execute();
  await db.schema.dropTable('hardware_receipts').execute();
}
