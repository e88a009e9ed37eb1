import { decideStepUp, type WalletProof } from '../../domain/accounts/account.js';
import { verifyPassword } from '../../domain/accounts/password.js';
import { credentialOf, type Principal, type StepUpKind, stepUpCounts } from '../../domain/accounts/principal.js';
import { totpContext } from '../../domain/accounts/secret-box.js';
import { verifyTotp } from '../../domain/accounts/totp.js';
import { DomainError } from '../../errors.js';
import { accountFacts, findAccountById } from '../../store/accounts.js';
import { recordStepUp } from '../../store/accounts-credentials.js';
import { useTotpStep } from '../../store/accounts-totp.js';
import type { AccountDeps } from './deps.js';
import { stepUpWithWallet } from './wallet-step-up.js';

/**
 * Steps up the credential that made the request, with the password or (once enrolled, and then only) a TOTP code;
 * an agent account with a signed step-up challenge from its sign-in wallet (wallet-step-up.ts). Only a session takes
 * a password or TOTP code; an API key only a wallet's signature (stepUpCounts).
 * A TOTP code is used once: of two requests with the same code, one wins.
 */
export async function stepUp(
  deps: AccountDeps,
  principal: Principal,
  proof: { password?: string; totp_code?: string; wallet?: WalletProof },
): Promise<{ method: Exclude<StepUpKind, 'oauth'>; expiresAt: Date }> {
  const { store } = deps;
  const now = deps.clock.now();
  const account = await findAccountById(store.db, principal.accountId);
  if (!account) throw new DomainError('UNAUTHENTICATED');
  const decision = decideStepUp(accountFacts(account), proof);
  if ('refused' in decision) throw new DomainError(decision.refused);
  if (!stepUpCounts(principal.authMethod, decision.method)) {
    throw new DomainError(
      'FORBIDDEN',
      'A password or TOTP step-up is for interactive sessions: sign in, step the session up and act with it. An API key is ' +
        "stepped up only by its account's sign-in wallet.",
    );
  }
  const expiresAt = new Date(now.getTime() + deps.settings.stepUpTtlMs);
  if (decision.method === 'wallet') {
    await stepUpWithWallet(deps, principal, decision.proof, expiresAt);
    return { method: 'wallet', expiresAt };
  }
  if (decision.method === 'password') {
    if (!(account.password_hash && (await verifyPassword(decision.password, account.password_hash))))
      throw new DomainError('STEP_UP_FAILED');
  } else {
    const secret = deps.box.open(account.totp_secret_sealed ?? '', totpContext(account.id));
    const step = verifyTotp(secret, decision.code, now, account.totp_last_step);
    if (step === null || !(await useTotpStep(store.db, account.id, account.totp_last_step, step))) throw new DomainError('STEP_UP_FAILED');
  }
  await recordStepUp(store.db, credentialOf(principal), decision.method, expiresAt);
  return { method: decision.method, expiresAt };
}
