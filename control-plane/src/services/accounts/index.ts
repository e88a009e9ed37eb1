import type { WalletCodeReader } from '../../chain/wallet-code.js';
import type { Clock } from '../../clock.js';
import type { Config } from '../../config/index.js';
import type { OAuthProviderName } from '../../config/oauth.js';
import type { WalletProof } from '../../domain/accounts/account.js';
import type { Principal } from '../../domain/accounts/principal.js';
import { SecretBox } from '../../domain/accounts/secret-box.js';
import type { Mailer } from '../../mail.js';
import type { OAuthProviderClient } from '../../oauth/providers.js';
import type { Store } from '../../store/db.js';
import type { KeysetPosition } from '../../store/keyset.js';
import type { CommitHook } from '../../store/transaction.js';
import type { AgentProfileFields } from '../../store/agent-wallets.js';
import { issueRegistrationChallenge, registerAgent } from './agent-registration.js';
import { createApiKey, listAccountApiKeys, type NewApiKeyInput, revokeAccountApiKey } from './api-keys.js';
import { listAuditLog } from './audit.js';
import { type DeletionRequestRecord, requestDeletion } from './deletion.js';
import type { AccountDeps, AccountSettings } from './deps.js';
import { setHostingBlock } from './hosting-block.js';
import { storeIntegrationToken } from './integrations.js';
import { accountWithEmail, profileOf } from './lookup.js';
import { finishAuthorization, startSignIn, startStepUp } from './oauth.js';
import { signIn, signOut } from './sessions.js';
import { createAccountByOperator, type OperatorAccountInput, type SignUpInput, signUp } from './sign-up.js';
import { stepUp } from './step-up.js';
import { confirmTotp, startTotpEnrollment } from './totp.js';
import { issueStepUpChallenge } from './wallet-step-up.js';
import { resendVerification, verifyEmail } from './verification.js';
import { commitMapped } from '../records.js';
import {
  type AccountRecord,
  type ApiKeyRecord,
  type IssuedApiKey,
  toAccountRecord,
  toAgentWalletRecord,
  toApiKeyRecord,
  toIssuedApiKey,
  type WithdrawalAddressRecord,
} from './records.js';
import { addSshKey, listAccountSshKeys, removeAccountSshKey, type SshKeyRecord } from './ssh-keys.js';
import { addWithdrawalAddress, listAccountWithdrawalAddresses, removeAccountWithdrawalAddress } from './withdrawal-addresses.js';

export type { SshKeyRecord } from './ssh-keys.js';
export type { AccountRecord, AgentWalletRecord, ApiKeyRecord, AuditRecord, IssuedApiKey, WithdrawalAddressRecord } from './records.js';

export interface AccountServicesInput {
  store: Store;
  clock: Clock;
  mailer: Mailer;
  config: AccountSettings & Pick<Config, 'secretKey'>;
  /** Contract code on the primary network (agent registration); null or absent: agent registration answers 503. */
  walletCode?: WalletCodeReader | null;
  /** The configured sign-in providers (oauth/providers.ts); absent: none. */
  oauthProviders?: Partial<Record<OAuthProviderName, OAuthProviderClient>>;
}

/** The account use cases, over one set of dependencies; routes and the CLI share them. */
export function buildAccountServices(input: AccountServicesInput) {
  const deps: AccountDeps = {
    store: input.store,
    clock: input.clock,
    mailer: input.mailer,
    settings: input.config,
    box: new SecretBox(input.config.secretKey),
    walletCode: input.walletCode ?? null,
    oauthProviders: input.oauthProviders ?? {},
  };
  const db = deps.store.db;
  return {
    signUp: async (account: SignUpInput) => {
      const { account: row, mail } = await signUp(deps, account);
      return { account: toAccountRecord(row), mail };
    },
    createAccountByOperator: async (account: OperatorAccountInput): Promise<AccountRecord> =>
      toAccountRecord(await createAccountByOperator(deps, account)),
    verifyEmail: async (token: string): Promise<AccountRecord> => toAccountRecord(await verifyEmail(deps, token)),
    resendVerification: (principal: Principal) => resendVerification(deps, principal),
    signIn: (credentials: { email: string; password: string }) => signIn(deps, credentials),
    signOut: (principal: Principal) => signOut(deps, principal),
    startProviderSignIn: (provider: OAuthProviderName) => startSignIn(deps, provider),
    startProviderStepUp: (provider: OAuthProviderName, principal: Principal) => startStepUp(deps, provider, principal),
    finishProviderAuthorization: (provider: OAuthProviderName, callbackUrl: URL, browserBinding: string | null) =>
      finishAuthorization(deps, provider, callbackUrl, browserBinding),
    profile: (principal: Principal) => profileOf(db, principal),
    accountWithEmail: (email: string) => accountWithEmail(db, email),
    stepUp: (principal: Principal, proof: { password?: string; totp_code?: string; wallet?: WalletProof }) =>
      stepUp(deps, principal, proof),
    walletStepUpChallenge: (principal: Principal) => issueStepUpChallenge(deps, principal),
    agentRegistrationChallenge: (address: string) => issueRegistrationChallenge(deps, address),
    registerAgent: async (registration: { message: string; signature: string; agent: AgentProfileFields }) => {
      const registered = await registerAgent(deps, registration);
      return {
        account: toAccountRecord(registered.account),
        wallet: toAgentWalletRecord(registered.wallet),
        apiKey: toIssuedApiKey(registered.apiKey),
        accountCreated: registered.accountCreated,
      };
    },
    startTotpEnrollment: (principal: Principal) => startTotpEnrollment(deps, principal),
    confirmTotp: (principal: Principal, code: string) => confirmTotp(deps, principal, code),
    createApiKey: async (key: NewApiKeyInput, commit?: CommitHook<IssuedApiKey>): Promise<IssuedApiKey> =>
      toIssuedApiKey(await createApiKey(deps, key, commitMapped(commit, toIssuedApiKey))),
    listApiKeys: async (accountId: string, after: KeysetPosition | null, fetch: number): Promise<ApiKeyRecord[]> =>
      (await listAccountApiKeys(deps, accountId, after, fetch)).map(toApiKeyRecord),
    revokeApiKey: (accountId: string, keyId: string) => revokeAccountApiKey(deps, accountId, keyId),
    storeIntegrationToken: (token: { accountId: string; provider: string; token: string }, commit?: CommitHook<void>) =>
      storeIntegrationToken(deps, token, commit),
    requestDeletion: (accountId: string, commit?: CommitHook<DeletionRequestRecord>) => requestDeletion(deps, accountId, commit),
    addWithdrawalAddress: (
      address: { accountId: string; address: string; network: string; label: string | null },
      commit?: CommitHook<WithdrawalAddressRecord>,
    ) => addWithdrawalAddress(deps, address, commit),
    listWithdrawalAddresses: (accountId: string, after: KeysetPosition | null, fetch: number) =>
      listAccountWithdrawalAddresses(deps, accountId, after, fetch),
    removeWithdrawalAddress: (accountId: string, id: string) => removeAccountWithdrawalAddress(deps, accountId, id),
    addSshKey: (key: { accountId: string; publicKey: string; label: string | null }, commit?: CommitHook<SshKeyRecord>) =>
      addSshKey(deps, key, commit),
    listSshKeys: (accountId: string, after: KeysetPosition | null, fetch: number) => listAccountSshKeys(deps, accountId, after, fetch),
    removeSshKey: (accountId: string, id: string) => removeAccountSshKey(deps, accountId, id),
    setHostingBlock: (block: { accountId: string; blocked: boolean; reason: string }) => setHostingBlock(deps, block),
    listAuditLog: (after: KeysetPosition | null, fetch: number) => listAuditLog(deps, after, fetch),
  };
}

export type AccountServices = ReturnType<typeof buildAccountServices>;
