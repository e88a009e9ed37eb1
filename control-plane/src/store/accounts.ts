import { randomUUID } from 'node:crypto';
import type { AccountRole } from '@ark/shared';
import type { Selectable } from 'kysely';
import { iso } from '../clock.js';
import type { AccountFacts } from '../domain/accounts/account.js';
import { DomainError } from '../errors.js';
import { type Executor, fromBool, isUniqueViolation, toBool } from './db.js';
import type { AccountsTable } from './tables/accounts.js';

// Accounts: one row per person or agent. Credentials, TOTP, verification, integrations, deletion requests and
// withdrawal addresses have modules of their own (accounts-*.ts, withdrawal-addresses.ts).

export type AccountRow = Selectable<AccountsTable>;

export function accountFacts(row: AccountRow): AccountFacts {
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    role: row.role,
    accountKind: row.account_kind,
    hostEnabled: toBool(row.host_enabled),
    emailVerified: row.email_verified_at !== null,
    totpEnabled: row.totp_secret_sealed !== null,
    hasPassword: row.password_hash !== null,
    createdAt: row.created_at,
  };
}

export interface NewAccount {
  /** A new UUID when not given (an agent account names its placeholder email after its id). */
  id?: string;
  email: string;
  passwordHash: string | null;
  name: string | null;
  role: AccountRole;
  accountKind?: 'human' | 'agent';
  emailVerified: boolean;
  now: Date;
}

/** Inserts an account; a taken (canonical) email is EMAIL_TAKEN. */
export async function insertAccount(db: Executor, account: NewAccount): Promise<AccountRow> {
  const row: AccountRow = {
    id: account.id ?? randomUUID(),
    email: account.email,
    password_hash: account.passwordHash,
    name: account.name,
    role: account.role,
    account_kind: account.accountKind ?? 'human',
    host_enabled: fromBool(account.role === 'host'),
    email_verified_at: account.emailVerified ? iso(account.now) : null,
    totp_secret_sealed: null,
    totp_pending_sealed: null,
    totp_last_step: null,
    spend_cap_micro_per_hour: null,
    created_at: iso(account.now),
    updated_at: iso(account.now),
  };
  try {
    await db.insertInto('accounts').values(row).execute();
  } catch (error) {
    if (isUniqueViolation(error)) throw new DomainError('EMAIL_TAKEN');
    throw error;
  }
  return row;
}

export async function findAccountById(db: Executor, id: string): Promise<AccountRow | undefined> {
  return db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function findAccountByEmail(db: Executor, email: string): Promise<AccountRow | undefined> {
  return db.selectFrom('accounts').selectAll().where('email', '=', email).executeTakeFirst();
}

export async function markEmailVerified(db: Executor, accountId: string, now: Date): Promise<void> {
  await db
    .updateTable('accounts')
    .set({ email_verified_at: iso(now), updated_at: iso(now) })
    .where('id', '=', accountId)
    .where('email_verified_at', 'is', null)
    .execute();
}
