import type { Kysely } from 'kysely';

// Sign-in with GitHub and Google (issue 13 item 4): the provider identities linked to accounts, and the sign-ins
// started and not yet finished (state, PKCE verifier and nonce kept server-side until the callback, single use).

export async function up(db: Kysely<any>): Promise<void> {
  // One row per provider account: (provider, subject) is the identity, never the email, which can change.
  await db.schema
    .createTable('oauth_identities')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('provider', 'text', (c) => c.notNull())
    .addColumn('subject', 'text', (c) => c.notNull())
    .addColumn('account_id', 'text', (c) => c.notNull().references('accounts.id'))
    // The verified email the provider reported at the latest sign-in: evidence, never the key.
    .addColumn('email', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('last_sign_in_at', 'text', (c) => c.notNull())
    .addUniqueConstraint('oauth_identities_provider_subject', ['provider', 'subject'])
    .execute();
  await db.schema.createIndex('oauth_identities_account').on('oauth_identities').columns(['account_id']).execute();

  // A started sign-in, found by the hash of its state; the browser that started it holds the binding cookie.
  await db.schema
    .createTable('oauth_authorizations')
    .addColumn('state_hash', 'text', (c) => c.primaryKey())
    .addColumn('provider', 'text', (c) => c.notNull())
    // sign-in (a new session) or step-up (of the session in session_id, for the account in account_id).
    .addColumn('purpose', 'text', (c) => c.notNull())
    .addColumn('code_verifier', 'text', (c) => c.notNull())
    .addColumn('nonce', 'text')
    .addColumn('browser_binding_hash', 'text')
    .addColumn('session_id', 'text')
    .addColumn('account_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('expires_at', 'text', (c) => c.notNull())
    .addColumn('used_at', 'text')
    .execute();
  await db.schema.createIndex('oauth_authorizations_expires').on('oauth_authorizations').columns(['expires_at']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('oauth_authorizations').execute();
  await db.schema.dropTable('oauth_identities').execute();
}
