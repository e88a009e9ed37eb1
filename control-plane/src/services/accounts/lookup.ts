import type { Account } from '@ark/shared';
import { accountView, normalizeEmail } from '../../domain/accounts/account.js';
import type { Principal } from '../../domain/accounts/principal.js';
import { DomainError } from '../../errors.js';
import { type AccountRow, accountFacts, findAccountByEmail, findAccountById } from '../../store/accounts.js';
import { accountOfPrincipal } from '../../store/accounts-authenticator.js';
import type { Executor } from '../../store/db.js';

/** The caller's account: the row read while authenticating when there is one, else read now. */
export async function callerAccount(db: Executor, principal: Principal): Promise<AccountRow> {
  const account = accountOfPrincipal(principal) ?? (await findAccountById(db, principal.accountId));
  if (!account) throw new DomainError('UNAUTHENTICATED');
  return account;
}

/** The caller's profile. The row read while authenticating answers it: no second query, and no promise when it is there. */
export function profileOf(db: Executor, principal: Principal): Account | Promise<Account> {
  const row = accountOfPrincipal(principal);
  if (row) return accountView(accountFacts(row), principal.authMethod);
  return callerAccount(db, principal).then((account) => accountView(accountFacts(account), principal.authMethod));
}

/** The account with this email, however the operator typed it (case, stray spaces). */
export function accountWithEmail(db: Executor, email: string): Promise<AccountRow | undefined> {
  return findAccountByEmail(db, normalizeEmail(email));
}
