import type { Kysely } from 'kysely';

// Agent accounts by wallet (issue 9): issued EIP-4361 challenges, single use, and each agent account's sign-in wallet.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('agent_challenges')
    .addColumn('nonce', 'text', (c) => c.primaryKey())
    .addColumn('purpose', 'text', (c) => c.notNull())
    .addColumn('address_key', 'text', (c) => c.notNull())
    .addColumn('account_id', 'text', (c) => c.references('accounts.id'))
    .addColumn('message', 'text', (c) => c.notNull())
    .addColumn('issued_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('used_at', 'text')
    .execute();
  // Pruning reads the oldest expiries first.
  await db.schema.createIndex('agent_challenges_expiry').on('agent_challenges').column('expires_at').execute();

  await db.schema
    .createTable('account_wallets')
    .addColumn('account_id', 'text', (c) => c.primaryKey().references('accounts.id'))
    .addColumn('address', 'text', (c) => c.notNull())
    .addColumn('address_key', 'text', (c) => c.notNull().unique())
    .addColumn('agent_name', 'text', (c) => c.notNull())
    .addColumn('agent_vendor', 'text', (c) => c.notNull())
    .addColumn('agent_model', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('registered_at', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('account_wallets').execute();
  await db.schema.dropTable('agent_challenges').execute();
}
