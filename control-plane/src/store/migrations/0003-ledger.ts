import { type Kysely, PostgresAdapter, sql } from 'kysely';

// Double-entry ledger: accounts with cached balances, and immutable postings.

export async function up(db: Kysely<any>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  await db.schema
    .createTable('ledger_accounts')
    // Byte order on Postgres, so lock order (ORDER BY key) is the same everywhere.
    .addColumn('key', 'text', (c) => (postgres ? c.primaryKey().modifyFront(sql`collate "C"`) : c.primaryKey()))
    .addColumn('owner_id', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('account_id', 'text')
    .addColumn('balance_micro', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    // Defence in depth: the store checks first and answers INSUFFICIENT_BALANCE.
    .addCheckConstraint('ledger_accounts_non_negative', sql`kind in ('external', 'adjustment') or balance_micro >= 0`)
    .execute();
  await db.schema.createIndex('ledger_accounts_account').on('ledger_accounts').columns(['account_id', 'kind']).execute();

  await db.schema
    .createTable('ledger_postings')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('at', 'text', (c) => c.notNull())
    .addColumn('from_key', 'text', (c) => c.notNull().references('ledger_accounts.key'))
    .addColumn('to_key', 'text', (c) => c.notNull().references('ledger_accounts.key'))
    .addColumn('amount_micro', 'bigint', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('reference', 'text', (c) => c.notNull())
    .addColumn('external_ref', 'text')
    .addCheckConstraint('ledger_postings_positive', sql`amount_micro > 0`)
    .addCheckConstraint('ledger_postings_two_accounts', sql`from_key <> to_key`)
    .execute();
  // Exactly once per external credit; NULLs are distinct on both dialects.
  await db.schema.createIndex('ledger_postings_external_ref').on('ledger_postings').column('external_ref').unique().execute();
  // Postings of one job or deposit. Per-account statements would add (from_key, at) and (to_key, at);
  // every index costs each transfer a write, so none is added before a query needs it.
  await db.schema.createIndex('ledger_postings_reference').on('ledger_postings').column('reference').execute();

  // Postings are immutable: refuse UPDATE and DELETE in the database itself.
  if (postgres) {
    await sql`create function ledger_postings_immutable() returns trigger language plpgsql as $$
      begin raise exception 'ledger postings are immutable'; end $$`.execute(db);
    await sql`create trigger ledger_postings_no_update before update or delete on ledger_postings
      for each row execute function ledger_postings_immutable()`.execute(db);
  } else {
    await sql`create trigger ledger_postings_no_update before update on ledger_postings
      begin select raise(abort, 'ledger postings are immutable'); end`.execute(db);
    await sql`create trigger ledger_postings_no_delete before delete on ledger_postings
      begin select raise(abort, 'ledger postings are immutable'); end`.execute(db);
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  await db.schema.dropTable('ledger_postings').execute();
  await db.schema.dropTable('ledger_accounts').execute();
  if (postgres) await sql`drop function if exists ledger_postings_immutable()`.execute(db);
}
