import { hashToken, newVerificationToken } from '../../domain/accounts/tokens.js';
import { verificationMail } from '../../domain/accounts/verification-mail.js';
import type { Principal } from '../../domain/accounts/principal.js';
import { DomainError } from '../../errors.js';
import { type AccountRow, findAccountById, markEmailVerified } from '../../store/accounts.js';
import { consumeEmailVerification, insertEmailVerification } from '../../store/accounts-email-verification.js';
import { appendAudit } from '../../store/audit.js';
import { transact } from '../../store/transaction.js';
import { callerAccount } from './lookup.js';
import type { AccountDeps } from './deps.js';

/** Whether a mail went out; `error` is why not, for the edge to log. */
export interface MailOutcome {
  sent: boolean;
  error: unknown;
}

/** Stores a fresh single-use token and mails its link. A failed mail is answered, not thrown: the account exists either way. */
export async function sendVerificationLink(deps: AccountDeps, account: AccountRow): Promise<MailOutcome> {
  const { store, clock, settings } = deps;
  const token = newVerificationToken();
  const now = clock.now();
  await insertEmailVerification(store.db, {
    accountId: account.id,
    tokenHash: hashToken(token),
    now,
    expiresAt: new Date(now.getTime() + settings.emailVerificationTtlMs),
  });
  try {
    await deps.mailer.send(verificationMail(account.email, settings.publicBaseUrl, token, settings.emailVerificationTtlMs));
    return { sent: true, error: null };
  } catch (error) {
    // The holder can ask for another link once signed in.
    return { sent: false, error };
  }
}

/** A fresh link for the caller; nothing is sent once the address is verified. */
export async function resendVerification(deps: AccountDeps, principal: Principal): Promise<MailOutcome> {
  const account = await callerAccount(deps.store.db, principal);
  if (account.email_verified_at !== null) return { sent: false, error: null };
  return sendVerificationLink(deps, account);
}

/** Uses a mailed token once and marks its account verified; VERIFICATION_TOKEN_INVALID otherwise. */
export async function verifyEmail(deps: AccountDeps, token: string): Promise<AccountRow> {
  const now = deps.clock.now();
  const account = await transact(deps.store, async (trx) => {
    const accountId = await consumeEmailVerification(trx, hashToken(token), now);
    if (!accountId) return null;
    await markEmailVerified(trx, accountId, now);
    await appendAudit(trx, { at: now, actorAccountId: accountId, action: 'account.email_verified', subject: accountId });
    return findAccountById(trx, accountId);
  });
  if (!account) throw new DomainError('VERIFICATION_TOKEN_INVALID');
  return account;
}
