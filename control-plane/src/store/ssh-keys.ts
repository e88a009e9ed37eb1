import { randomUUID } from 'node:crypto';
import type { Selectable } from 'kysely';
import { iso } from '../clock.js';
import { DomainError } from '../errors.js';
import { type Executor, isUniqueViolation } from './db.js';
import { type KeysetPosition, keysetPage } from './keyset.js';
import type { AccountSshKeysTable } from './tables/accounts.js';

// Saved SSH public keys of an account.

export type SshKeyRow = Selectable<AccountSshKeysTable>;

export async function insertSshKey(
  db: Executor,
  input: { accountId: string; publicKey: string; fingerprint: string; label: string | null; now: Date },
): Promise<SshKeyRow> {
  const row: SshKeyRow = {
    id: randomUUID(),
    account_id: input.accountId,
    label: input.label,
    public_key: input.publicKey,
    fingerprint: input.fingerprint,
    created_at: iso(input.now),
  };
  try {
    await db.insertInto('account_ssh_keys').values(row).execute();
  } catch (error) {
    if (isUniqueViolation(error)) throw new DomainError('SSH_KEY_EXISTS');
    throw error;
  }
  return row;
}

export async function countSshKeys(db: Executor, accountId: string): Promise<number> {
  const row = await db
    .selectFrom('account_ssh_keys')
    .select((eb) => eb.fn.countAll().as('n'))
    .where('account_id', '=', accountId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** One account's keys, newest first, after the cursor position [created_at, id]. */
export async function listSshKeys(db: Executor, accountId: string, after: KeysetPosition | null, fetch: number): Promise<SshKeyRow[]> {
  const query = db.selectFrom('account_ssh_keys').selectAll().where('account_id', '=', accountId);
  return keysetPage(query, ['created_at', 'id'], 'desc', after, fetch).execute();
}

/** Deletes the account's key; false when it has none by that id. */
export async function deleteSshKey(db: Executor, accountId: string, id: string): Promise<boolean> {
  const result = await db.deleteFrom('account_ssh_keys').where('id', '=', id).where('account_id', '=', accountId).executeTakeFirst();
  return Number(result.numDeletedRows) === 1;
}
