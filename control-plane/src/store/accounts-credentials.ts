import { randomUUID } from 'node:crypto';
import type { ApiKeyScope } from '@ark/shared';
import type { Selectable } from 'kysely';
import { iso } from '../clock.js';
import { encodeScopes } from '../domain/accounts/account.js';
import type { Credential, StepUpKind } from '../domain/accounts/principal.js';
import type { Executor } from './db.js';
import { type KeysetPosition, keysetPage } from './keyset.js';
import type { ApiKeysTable } from './tables/accounts.js';

// Credentials: sessions and API keys. Only hashes of their secrets are stored; a step-up is recorded on the
// credential that made it, so it never spreads to another one. The secrets are minted and the expiries decided by
// the use cases (services/accounts/credentials.ts): these functions store what they are given.

export type ApiKeyRow = Selectable<ApiKeysTable>;

export async function insertSession(db: Executor, input: { accountId: string; tokenHash: string; now: Date; expiresAt: Date }) {
  const row = {
    id: randomUUID(),
    account_id: input.accountId,
    token_hash: input.tokenHash,
    created_at: iso(input.now),
    expires_at: iso(input.expiresAt),
    revoked_at: null,
    step_up_method: null,
    step_up_until: null,
  };
  await db.insertInto('sessions').values(row).execute();
  return row;
}

export async function revokeSession(db: Executor, sessionId: string, now: Date): Promise<void> {
  await db
    .updateTable('sessions')
    .set({ revoked_at: iso(now) })
    .where('id', '=', sessionId)
    .where('revoked_at', 'is', null)
    .execute();
}

export interface NewApiKey {
  accountId: string;
  label: string;
  scopes: readonly ApiKeyScope[];
  prefix: string;
  secretHash: string;
  expiresAt: string | null;
  now: Date;
}

export async function insertApiKey(db: Executor, key: NewApiKey): Promise<ApiKeyRow> {
  const row: ApiKeyRow = {
    id: randomUUID(),
    account_id: key.accountId,
    label: key.label,
    scopes: encodeScopes(key.scopes),
    prefix: key.prefix,
    secret_hash: key.secretHash,
    created_at: iso(key.now),
    expires_at: key.expiresAt,
    revoked_at: null,
    last_used_at: null,
    step_up_method: null,
    step_up_until: null,
  };
  await db.insertInto('api_keys').values(row).execute();
  return row;
}

/** Unrevoked keys of one account, newest first, after the cursor position [created_at, id]. */
export async function listApiKeys(db: Executor, accountId: string, after: KeysetPosition | null, fetch: number): Promise<ApiKeyRow[]> {
  const query = db.selectFrom('api_keys').selectAll().where('account_id', '=', accountId).where('revoked_at', 'is', null);
  return keysetPage(query, ['created_at', 'id'], 'desc', after, fetch).execute();
}

/** Revokes one of the account's keys. False when the account has no such key (someone else's is "no such key"). */
export async function revokeApiKey(db: Executor, accountId: string, keyId: string, now: Date): Promise<boolean> {
  const key = await db
    .selectFrom('api_keys')
    .select(['id', 'revoked_at'])
    .where('id', '=', keyId)
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  if (!key) return false;
  if (key.revoked_at === null)
    await db
      .updateTable('api_keys')
      .set({ revoked_at: iso(now) })
      .where('id', '=', keyId)
      .execute();
  return true;
}

/** Records a step-up on the credential that made the request, so it stays bound to that credential. */
export async function recordStepUp(db: Executor, credential: Credential, method: StepUpKind, until: Date): Promise<void> {
  const values = { step_up_method: method, step_up_until: iso(until) };
  if (credential.kind === 'session') await db.updateTable('sessions').set(values).where('id', '=', credential.id).execute();
  else await db.updateTable('api_keys').set(values).where('id', '=', credential.id).execute();
}

/** Records when an API key was last used (the authenticator refreshes it at most once a minute). */
export async function touchApiKey(db: Executor, keyId: string, now: Date): Promise<void> {
  await db
    .updateTable('api_keys')
    .set({ last_used_at: iso(now) })
    .where('id', '=', keyId)
    .execute();
}
