import type { Kysely } from 'kysely';

// Admissions (issue 12): the platform's one admission switch, and the single-use acceptance authorizations that let
// one operation of one account through while admission is paused.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('admission_state')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('enabled', 'integer', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('changed_by', 'text')
    .addColumn('changed_at', 'text')
    .addColumn('version', 'bigint', (c) => c.notNull())
    .execute();
  // Open until an operator says otherwise.
  await db.insertInto('admission_state').values({ id: 'platform', enabled: 1, version: 0n }).execute();

  await db.schema
    .createTable('acceptance_authorizations')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('created_by', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('consumed_at', 'text')
    .addColumn('consumed_reference', 'text')
    .execute();
  // A deposit credit looks for an unused one of its account and kind.
  await db.schema
    .createIndex('acceptance_authorizations_open')
    .on('acceptance_authorizations')
    .columns(['account_id', 'kind', 'consumed_at', 'expires_at'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('acceptance_authorizations').execute();
  await db.schema.dropTable('admission_state').execute();
}
