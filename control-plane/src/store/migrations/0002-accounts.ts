import { type Kysely, sql } from 'kysely';

// Accounts, sessions, API keys, email verification, integrations, deletion requests, withdrawal addresses.
// Timestamps are ISO-8601 UTC text; booleans 0/1 integers; bearer secrets only as sha256 hex.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('accounts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('email', 'text', (c) => c.notNull().unique())
    .addColumn('password_hash', 'text')
    .addColumn('name', 'text')
    .addColumn('role', 'text', (c) => c.notNull())
    .addColumn('account_kind', 'text', (c) => c.notNull())
    .addColumn('host_enabled', 'integer', (c) => c.notNull())
    .addColumn('email_verified_at', 'text')
    .addColumn('totp_secret_sealed', 'text')
    .addColumn('totp_pending_sealed', 'text')
    .addColumn('totp_last_step', 'bigint')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('token_hash', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('revoked_at', 'text')
    .addColumn('step_up_method', 'text')
    .addColumn('step_up_until', 'text')
    .execute();
  await db.schema.createIndex('sessions_account').on('sessions').column('account_id').execute();
  await db.schema.createIndex('sessions_expires_at').on('sessions').column('expires_at').execute();

  await db.schema
    .createTable('api_keys')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('label', 'text', (c) => c.notNull())
    .addColumn('scopes', 'text', (c) => c.notNull())
    .addColumn('prefix', 'text', (c) => c.notNull())
    .addColumn('secret_hash', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text')
    .addColumn('revoked_at', 'text')
    .addColumn('last_used_at', 'text')
    .addColumn('step_up_method', 'text')
    .addColumn('step_up_until', 'text')
    .execute();
  await db.schema.createIndex('api_keys_account_created').on('api_keys').columns(['account_id', 'created_at', 'id']).execute();

  await db.schema
    .createTable('email_verifications')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('used_at', 'text')
    .execute();
  await db.schema.createIndex('email_verifications_account').on('email_verifications').column('account_id').execute();

  await db.schema
    .createTable('account_integrations')
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('token_sealed', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('account_integrations_pk', ['account_id', 'provider'])
    .execute();

  await db.schema
    .createTable('account_deletion_requests')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('requested_at', 'text', (c) => c.notNull())
    .execute();
  // At most one open request per account.
  await db.schema
    .createIndex('account_deletion_requests_pending')
    .on('account_deletion_requests')
    .column('account_id')
    .unique()
    .where(sql.ref('state'), '=', 'PENDING')
    .execute();

  await db.schema
    .createTable('withdrawal_addresses')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    .addColumn('address', 'text', (c) => c.notNull())
    .addColumn('address_key', 'text', (c) => c.notNull())
    .addColumn('network', 'text', (c) => c.notNull())
    .addColumn('label', 'text')
    .addColumn('version', 'bigint', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('removed_at', 'text')
    .execute();
  await db.schema
    .createIndex('withdrawal_addresses_account_created')
    .on('withdrawal_addresses')
    .columns(['account_id', 'created_at', 'id'])
    .execute();
  // One live row per (account, network, address); removed rows stay as evidence of the bumped version.
  await db.schema
    .createIndex('withdrawal_addresses_live')
    .on('withdrawal_addresses')
    .columns(['account_id', 'network', 'address_key'])
    .unique()
    .where(sql.ref('removed_at'), 'is', null)
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of [
    'withdrawal_addresses',
    'account_deletion_requests',
    'account_integrations',
    'email_verifications',
    'api_keys',
    'sessions',
    'accounts',
  ]) {
    await db.schema.dropTable(table).execute();
  }
}
