import { randomUUID } from 'node:crypto';
import type { Selectable } from 'kysely';
import { iso } from '../clock.js';
import type { Executor } from './db.js';
import type { OAuthAuthorizationsTable, OAuthIdentitiesTable, OAuthProviderColumn } from './tables/oauth.js';

// Sign-in with GitHub and Google: started authorizations (single use, by a conditional UPDATE, so of two callbacks
// with the same state one wins) and the provider identities linked to accounts.

export type OAuthAuthorizationRow = Selectable<OAuthAuthorizationsTable>;
export type OAuthIdentityRow = Selectable<OAuthIdentitiesTable>;

/** Expired authorizations removed per start: the table stays bounded without a worker of its own. */
const PRUNE_BATCH = 100;

export async function insertAuthorization(db: Executor, row: OAuthAuthorizationRow): Promise<void> {
  await db.insertInto('oauth_authorizations').values(row).execute();
}

/**
 * Marks the authorization with this state hash used, if it is unused and unexpired at `now`, and answers it; undefined
 * when there is none, it expired, or another callback took it first.
 */
export async function takeAuthorization(db: Executor, stateHash: string, now: Date): Promise<OAuthAuthorizationRow | undefined> {
  const result = await db
    .updateTable('oauth_authorizations')
    .set({ used_at: iso(now) })
    .where('state_hash', '=', stateHash)
    .where('used_at', 'is', null)
    .where('expires_at', '>', iso(now))
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) !== 1) return undefined;
  return db.selectFrom('oauth_authorizations').selectAll().where('state_hash', '=', stateHash).executeTakeFirst();
}

/** Deletes up to a batch of authorizations that expired before `before`. */
export async function pruneAuthorizations(db: Executor, before: Date): Promise<void> {
  const old = db
    .selectFrom('oauth_authorizations')
    .select('state_hash')
    .where('expires_at', '<', iso(before))
    .orderBy('expires_at')
    .limit(PRUNE_BATCH);
  await db.deleteFrom('oauth_authorizations').where('state_hash', 'in', old).execute();
}

export function findIdentity(db: Executor, provider: OAuthProviderColumn, subject: string): Promise<OAuthIdentityRow | undefined> {
  return db.selectFrom('oauth_identities').selectAll().where('provider', '=', provider).where('subject', '=', subject).executeTakeFirst();
}

/** Links a provider identity to an account; false when that identity was linked by another request meanwhile. */
export async function insertIdentity(
  db: Executor,
  identity: { provider: OAuthProviderColumn; subject: string; accountId: string; email: string; now: Date },
): Promise<boolean> {
  // ON CONFLICT DO NOTHING rather than a caught violation: on Postgres a failed statement would abort the transaction.
  const result = await db
    .insertInto('oauth_identities')
    .values({
      id: randomUUID(),
      provider: identity.provider,
      subject: identity.subject,
      account_id: identity.accountId,
      email: identity.email,
      created_at: iso(identity.now),
      last_sign_in_at: iso(identity.now),
    })
    .onConflict((conflict) => conflict.columns(['provider', 'subject']).doNothing())
    .executeTakeFirst();
  return (result.numInsertedOrUpdatedRows ?? 0n) === 1n;
}

export async function touchIdentity(db: Executor, id: string, email: string, now: Date): Promise<void> {
  await db
    .updateTable('oauth_identities')
    .set({ email, last_sign_in_at: iso(now) })
    .where('id', '=', id)
    .execute();
}
