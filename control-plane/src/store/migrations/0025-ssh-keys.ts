import type { Kysely } from 'kysely';

// Saved SSH public keys of an account (issue 25 item 1): the console's rent form offers them. A job still carries its
// own keys (the reservation body); removing a saved key changes no job.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('account_ssh_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('label', 'text')
    .addColumn('public_key', 'text', (c) => c.notNull())
    .addColumn('fingerprint', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('account_ssh_keys_unique').on('account_ssh_keys').columns(['account_id', 'fingerprint']).unique().execute();
  await db.schema.createIndex('account_ssh_keys_list').on('account_ssh_keys').columns(['account_id', 'created_at', 'id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('account_ssh_keys').execute();
}
