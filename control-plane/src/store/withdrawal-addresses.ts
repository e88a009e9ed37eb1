import { randomUUID } from 'node:crypto';
import type { Selectable } from 'kysely';
import { iso } from '../clock.js';
import { DomainError } from '../errors.js';
import { type Executor, isUniqueViolation } from './db.js';
import { type KeysetPosition, keysetPage } from './keyset.js';
import type { WithdrawalAddressesTable } from './tables/accounts.js';

// Withdrawal addresses of an account. Removal bumps the version, so a transfer pinned to the old version is
// no longer paid automatically.

export type WithdrawalAddressRow = Selectable<WithdrawalAddressesTable>;

export async function insertWithdrawalAddress(
  db: Executor,
  input: { accountId: string; address: string; network: string; label: string | null; now: Date },
): Promise<WithdrawalAddressRow> {
  const row: WithdrawalAddressRow = {
    id: randomUUID(),
    account_id: input.accountId,
    address: input.address,
    address_key: input.address.toLowerCase(),
    network: input.network,
    label: input.label,
    version: 1n,
    created_at: iso(input.now),
    removed_at: null,
  };
  try {
    await db.insertInto('withdrawal_addresses').values(row).execute();
  } catch (error) {
    if (isUniqueViolation(error)) throw new DomainError('WITHDRAWAL_ADDRESS_EXISTS');
    throw error;
  }
  return row;
}

/** A live (not removed) address of the account, for the withdrawal code: pin `version` on the transfer. */
export async function findLiveWithdrawalAddress(db: Executor, accountId: string, id: string): Promise<WithdrawalAddressRow | undefined> {
  return db
    .selectFrom('withdrawal_addresses')
    .selectAll()
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .where('removed_at', 'is', null)
    .executeTakeFirst();
}

/** Live addresses of one account, newest first, after the cursor position [created_at, id]. */
export async function listWithdrawalAddresses(
  db: Executor,
  accountId: string,
  after: KeysetPosition | null,
  fetch: number,
): Promise<WithdrawalAddressRow[]> {
  const query = db.selectFrom('withdrawal_addresses').selectAll().where('account_id', '=', accountId).where('removed_at', 'is', null);
  return keysetPage(query, ['created_at', 'id'], 'desc', after, fetch).execute();
}

/** Marks the address removed and bumps its version in one statement; false when there is no live one. */
export async function removeWithdrawalAddress(db: Executor, accountId: string, id: string, now: Date): Promise<boolean> {
  const result = await db
    .updateTable('withdrawal_addresses')
    .set((eb) => ({ removed_at: iso(now), version: eb('version', '+', 1n) }))
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .where('removed_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}
