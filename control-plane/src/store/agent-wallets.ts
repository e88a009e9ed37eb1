import type { Selectable } from 'kysely';
import { iso } from '../clock.js';
import type { Executor } from './db.js';
import type { AccountWalletsTable } from './tables/agents.js';

// Agent accounts' sign-in wallets: one per account, one account per wallet (unique lower-case address).

export type AccountWalletRow = Selectable<AccountWalletsTable>;

export interface AgentProfileFields {
  name: string;
  vendor: string;
  model: string;
}

export function findWalletByAddress(db: Executor, address: string): Promise<AccountWalletRow | undefined> {
  return db.selectFrom('account_wallets').selectAll().where('address_key', '=', address.toLowerCase()).executeTakeFirst();
}

export function findWalletOfAccount(db: Executor, accountId: string): Promise<AccountWalletRow | undefined> {
  return db.selectFrom('account_wallets').selectAll().where('account_id', '=', accountId).executeTakeFirst();
}

/** Binds `address` to the account; a wallet that already has an account is a unique violation (the caller retries). */
export async function insertWallet(
  db: Executor,
  input: { accountId: string; address: string; profile: AgentProfileFields; now: Date },
): Promise<AccountWalletRow> {
  const row: AccountWalletRow = {
    account_id: input.accountId,
    address: input.address,
    address_key: input.address.toLowerCase(),
    agent_name: input.profile.name,
    agent_vendor: input.profile.vendor,
    agent_model: input.profile.model,
    created_at: iso(input.now),
    registered_at: iso(input.now),
  };
  await db.insertInto('account_wallets').values(row).execute();
  return row;
}

/** A re-registration: the self-declared profile is refreshed (display only) and the time recorded. */
export async function recordReRegistration(db: Executor, accountId: string, profile: AgentProfileFields, now: Date): Promise<void> {
  await db
    .updateTable('account_wallets')
    .set({ agent_name: profile.name, agent_vendor: profile.vendor, agent_model: profile.model, registered_at: iso(now) })
    .where('account_id', '=', accountId)
    .execute();
}
