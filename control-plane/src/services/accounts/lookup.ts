import { type AccountFacts, normalizeEmail } from '../../domain/accounts/account.js';
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
export function profileOf(db: Executor, principal: Principal): AccountFacts | Promise<AccountFacts> {
  const row = accountOfPrincipal(principal);
  if (row) return accountFacts(row);
  return callerAccount(db, principal).then(accountFacts);
}

/** The account with this email, however the operator typed it (case, stray spaces). */
export async function accountWithEmail(db: Executor, email: string): Promise<AccountFacts | undefined> {
  const row = await findAccountByEmail(db, normalizeEmail(email));
  return row && accountFacts(row);
}
