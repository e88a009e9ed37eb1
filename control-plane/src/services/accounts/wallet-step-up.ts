import type { WalletProof } from '../../domain/accounts/account.js';
import { credentialOf, type Principal } from '../../domain/accounts/principal.js';
import { DomainError } from '../../errors.js';
import { recordStepUp } from '../../store/accounts-credentials.js';
import { findWalletOfAccount } from '../../store/agent-wallets.js';
import { transact } from '../../store/transaction.js';
import type { AccountDeps } from './deps.js';
import { checkProof, consumeProof, issueChallenge } from './wallet-proof.js';

// Wallet step-up (contract part 5, item 4; step_up_method wallet): the account's sign-in wallet signs a fresh step-up
// challenge, which steps up the credential that asked, exactly as a password or TOTP code would.

export interface WalletStepUpChallenge {
  message: string;
  expiresAt: Date;
  walletAddress: string;
}

/** A step-up challenge for the caller's sign-in wallet, bound to the caller's account. */
export async function issueStepUpChallenge(deps: AccountDeps, principal: Principal): Promise<WalletStepUpChallenge> {
  const wallet = await findWalletOfAccount(deps.store.db, principal.accountId);
  if (!wallet) throw new DomainError('STEP_UP_WALLET_NOT_LINKED');
  const issued = await issueChallenge(deps, { purpose: 'step-up', address: wallet.address, accountId: principal.accountId });
  return { ...issued, walletAddress: wallet.address };
}

/** Checks the signed step-up challenge, then consumes it and records the step-up on the credential in one transaction. */
export async function stepUpWithWallet(deps: AccountDeps, principal: Principal, proof: WalletProof, until: Date): Promise<void> {
  const checked = await checkProof(deps, 'step-up', proof);
  // Issued to this account's wallet: a challenge another account asked for is not this account's proof.
  const wallet = await findWalletOfAccount(deps.store.db, principal.accountId);
  if (checked.challenge.account_id !== principal.accountId || !wallet || wallet.address_key !== checked.challenge.address_key) {
    throw new DomainError('SIWE_MESSAGE_NOT_ISSUED');
  }
  await transact(deps.store, async (trx) => {
    await consumeProof(trx, deps, checked);
    await recordStepUp(trx, credentialOf(principal), 'wallet', until);
  });
}
