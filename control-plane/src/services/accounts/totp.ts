import type { Principal } from '../../domain/accounts/principal.js';
import { totpContext } from '../../domain/accounts/secret-box.js';
import { newTotpSecret, totpUri, verifyTotp } from '../../domain/accounts/totp.js';
import { DomainError } from '../../errors.js';
import { findAccountById } from '../../store/accounts.js';
import { enableTotp, setPendingTotp } from '../../store/accounts-totp.js';
import { appendAudit } from '../../store/audit.js';
import { transact } from '../../store/transaction.js';
import { callerAccount } from './lookup.js';
import type { AccountDeps } from './deps.js';

/** Starts TOTP enrollment: a pending seed, sealed; it takes effect only once a first code proves it. */
export async function startTotpEnrollment(deps: AccountDeps, principal: Principal): Promise<{ otpauthUri: string; secret: string }> {
  const account = await callerAccount(deps.store.db, principal);
  if (account.totp_secret_sealed !== null) throw new DomainError('TOTP_ALREADY_ENABLED');
  const secret = newTotpSecret();
  await setPendingTotp(deps.store.db, account.id, deps.box.seal(secret, totpContext(account.id)), deps.clock.now());
  return { otpauthUri: totpUri(secret, account.email), secret };
}

/** Enables TOTP with a first code from the pending seed; audited. */
export async function confirmTotp(deps: AccountDeps, principal: Principal, code: string): Promise<void> {
  const now = deps.clock.now();
  const account = await findAccountById(deps.store.db, principal.accountId);
  if (!account) throw new DomainError('UNAUTHENTICATED');
  if (account.totp_secret_sealed !== null) throw new DomainError('TOTP_ALREADY_ENABLED');
  const pending = account.totp_pending_sealed;
  if (pending === null) throw new DomainError('TOTP_NOT_ENROLLED', 'Start enrollment with POST /api/v1/account/totp first.');
  const step = verifyTotp(deps.box.open(pending, totpContext(account.id)), code, now, null);
  if (step === null) throw new DomainError('TOTP_CODE_INVALID');
  await transact(deps.store, async (trx) => {
    if (!(await enableTotp(trx, account.id, pending, step, now)))
      throw new DomainError('TOTP_NOT_ENROLLED', 'The enrollment changed meanwhile; start again.');
    await appendAudit(trx, { at: now, actorAccountId: account.id, action: 'account.totp_enabled', subject: account.id });
  });
}
