import { decideStepUp } from '../../domain/accounts/account.js';
import { verifyPassword } from '../../domain/accounts/password.js';
import { credentialOf, type Principal } from '../../domain/accounts/principal.js';
import { totpContext } from '../../domain/accounts/secret-box.js';
import { verifyTotp } from '../../domain/accounts/totp.js';
import { DomainError } from '../../errors.js';
import { accountFacts, findAccountById } from '../../store/accounts.js';
import { recordStepUp } from '../../store/accounts-credentials.js';
import { useTotpStep } from '../../store/accounts-totp.js';
import type { AccountDeps } from './deps.js';

/**
 * Steps up the credential that made the request, with the password or (once enrolled, and then only) a TOTP code.
 * A TOTP code is used once: of two requests with the same code, one wins.
 */
export async function stepUp(
  deps: AccountDeps,
  principal: Principal,
  proof: { password?: string; totp_code?: string },
): Promise<{ method: 'password' | 'totp'; expiresAt: Date }> {
  const { store } = deps;
  const now = deps.clock.now();
  const account = await findAccountById(store.db, principal.accountId);
  if (!account) throw new DomainError('UNAUTHENTICATED');
  const decision = decideStepUp(accountFacts(account), proof);
  if ('refused' in decision) throw new DomainError(decision.refused);
  if (decision.method === 'password') {
    if (!(account.password_hash && (await verifyPassword(decision.password, account.password_hash))))
      throw new DomainError('STEP_UP_FAILED');
  } else {
    const secret = deps.box.open(account.totp_secret_sealed ?? '', totpContext(account.id));
    const step = verifyTotp(secret, decision.code, now, account.totp_last_step);
    if (step === null || !(await useTotpStep(store.db, account.id, account.totp_last_step, step))) throw new DomainError('STEP_UP_FAILED');
  }
  const expiresAt = new Date(now.getTime() + deps.settings.stepUpTtlMs);
  await recordStepUp(store.db, credentialOf(principal), decision.method, expiresAt);
  return { method: decision.method, expiresAt };
}
