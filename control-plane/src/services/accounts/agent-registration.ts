import { randomUUID } from 'node:crypto';
import { getAddress } from 'viem';
import { DomainError } from '../../errors.js';
import { type AccountRow, findAccountById, insertAccount } from '../../store/accounts.js';
import { issueApiKey } from './credentials.js';
import {
  type AccountWalletRow,
  type AgentProfileFields,
  findWalletByAddress,
  insertWallet,
  recordReRegistration,
} from '../../store/agent-wallets.js';
import { appendAudit } from '../../store/audit.js';
import { isUniqueViolation } from '../../store/db.js';
import { transact } from '../../store/transaction.js';
import type { CreatedApiKey } from './api-keys.js';
import type { AccountDeps } from './deps.js';
import { checkProof, consumeProof, type IssuedChallenge, issueChallenge } from './wallet-proof.js';

// Agent self-registration by wallet (contract part 5, item 6): a challenge for an address, then the signed challenge
// creates the agent account (or finds the wallet's account) and answers a new renter key, exactly once.

/** An agent account has no mailbox: a placeholder under the reserved .invalid TLD (RFC 6761), unique by account id. */
export const agentPlaceholderEmail = (accountId: string): string => `agent-${accountId}@agents.ark.invalid`;

export interface RegistrationChallenge extends IssuedChallenge {
  termsVersion: string;
  termsUrl: string;
}

export async function issueRegistrationChallenge(deps: AccountDeps, address: string): Promise<RegistrationChallenge> {
  // Without the primary network the EOA check cannot run: say so now rather than after the wallet has signed.
  if (!deps.walletCode) throw walletCheckUnavailable();
  const issued = await issueChallenge(deps, { purpose: 'register', address: getAddress(address), accountId: null });
  return { ...issued, termsVersion: deps.settings.termsVersion, termsUrl: deps.settings.termsUrl };
}

export interface AgentRegistered {
  account: AccountRow;
  wallet: AccountWalletRow;
  apiKey: CreatedApiKey;
  accountCreated: boolean;
}

/**
 * Checks the signed challenge, refuses a wallet with code on the primary network, then in one transaction consumes the
 * challenge, creates the agent account (or takes the wallet's existing one) and issues a renter key.
 */
export async function registerAgent(
  deps: AccountDeps,
  input: { message: string; signature: string; agent: AgentProfileFields },
): Promise<AgentRegistered> {
  const proof = await checkProof(deps, 'register', input);
  await refuseContractWallet(deps, proof.address);
  const register = () =>
    transact(deps.store, async (trx) => {
      const now = deps.clock.now();
      await consumeProof(trx, deps, proof);
      const existing = await findWalletByAddress(trx, proof.address);
      let account: AccountRow;
      let wallet: AccountWalletRow;
      if (existing) {
        const found = await findAccountById(trx, existing.account_id);
        if (!found) throw new Error(`wallet ${existing.address_key} names a missing account`);
        account = found;
        await recordReRegistration(trx, account.id, input.agent, now);
        wallet = { ...existing, agent_name: input.agent.name, agent_vendor: input.agent.vendor, agent_model: input.agent.model };
      } else {
        const id = randomUUID();
        account = await insertAccount(trx, {
          id,
          email: agentPlaceholderEmail(id),
          passwordHash: null,
          // Display only: the profile confers no authority (contract part 5, item 10).
          name: input.agent.name,
          role: 'renter',
          accountKind: 'agent',
          emailVerified: false,
          now,
        });
        wallet = await insertWallet(trx, { accountId: id, address: proof.address, profile: input.agent, now });
      }
      const apiKey = await issueApiKey(trx, {
        accountId: account.id,
        label: 'agent registration',
        scopes: ['renter'],
        expiresAt: null,
        now,
      });
      await appendAudit(trx, {
        at: now,
        actorAccountId: account.id,
        action: existing ? 'agent.re_registered' : 'agent.registered',
        subject: account.id,
        detail: { wallet: proof.address, api_key_id: apiKey.row.id, agent: input.agent },
      });
      return { account, wallet, apiKey, accountCreated: !existing };
    });
  try {
    return await register();
  } catch (error) {
    // Two first registrations of one wallet raced (two challenges): the loser rolled back whole and, run again, finds
    // the winner's account and gets a key for it.
    if (!isUniqueViolation(error)) throw error;
    return register();
  }
}

async function refuseContractWallet(deps: AccountDeps, address: `0x${string}`): Promise<void> {
  if (!deps.walletCode) throw walletCheckUnavailable();
  let hasCode: boolean;
  try {
    hasCode = await deps.walletCode.hasCode(address);
  } catch {
    throw new DomainError('WALLET_CHECK_UNAVAILABLE');
  }
  if (hasCode) throw new DomainError('WALLET_NOT_EOA');
}

const walletCheckUnavailable = () =>
  new DomainError(
    'WALLET_CHECK_UNAVAILABLE',
    'Agent registration needs the primary network (ARK_CHAINS) to check that the wallet is an externally owned account; it is not configured on this server.',
  );
