import type {
  Account,
  AgentChallenge,
  AgentRegistration,
  ApiKeyCreated,
  ApiKeyScope,
  ApiKeyView,
  AuditLogEntry,
  DeletionRequest,
  EmailVerificationResponse,
  OAuthCallbackResult,
  OAuthStepUpStarted,
  SessionCreated,
  SignUpResponse,
  SpendCap,
  StepUpResponse,
  TotpEnrollment,
  WalletStepUpChallenge,
} from '@ark/shared';
import type { OAuthProviderName } from '../config/oauth.js';
import { stepUpMethodOf } from '../domain/accounts/account.js';
import type { SpendCapStanding } from '../domain/jobs/spend-cap.js';
import type { RegistrationChallenge } from '../services/accounts/agent-registration.js';
import type { DeletionRequestRecord } from '../services/accounts/deletion.js';
import type { CallbackOutcome } from '../services/accounts/oauth.js';
import type { AccountRecord, AgentWalletRecord, ApiKeyRecord, AuditRecord, IssuedApiKey } from '../services/accounts/index.js';
import type { WalletStepUpChallenge as WalletStepUpChallengeRecord } from '../services/accounts/wallet-step-up.js';

// Accounts as the wire shows them (shared/src/http/accounts.ts, agents.ts): the account, its keys, sessions and
// step-ups, agents by wallet, the audit log; the routes and `ark-cp` alike.

/** Contract part 5, Account: the caller's own profile and security metadata. */
export function accountView(account: AccountRecord, authMethod: Account['auth_method']): Account {
  return {
    account_id: account.id,
    email: account.email,
    role: account.role,
    host_enabled: account.hostEnabled,
    email_verified: account.emailVerified,
    two_factor_enabled: account.totpEnabled,
    auth_method: authMethod,
    step_up_method: stepUpMethodOf(account),
    name: account.name,
    account_kind: account.accountKind,
    created_at: account.createdAt,
  };
}

/** A sign-up: the account, not yet verified (the link is mailed). */
export const signUpView = (account: AccountRecord): SignUpResponse => ({
  account_id: account.id,
  email: account.email,
  email_verified: false,
});

/** The account whose email a token just verified. */
export const emailVerifiedView = (account: AccountRecord): EmailVerificationResponse => ({
  account_id: account.id,
  email: account.email,
  email_verified: true as const,
});

export const sessionCreatedView = (session: { token: string; expiresAt: string }): SessionCreated => ({
  session_token: session.token,
  expires_at: session.expiresAt,
});

export const stepUpView = (stepUp: { method: StepUpResponse['method']; expiresAt: Date }): StepUpResponse => ({
  method: stepUp.method,
  expires_at: stepUp.expiresAt.toISOString(),
});

export const totpEnrollmentView = (enrollment: { otpauthUri: string; secret: string }): TotpEnrollment => ({
  otpauth_uri: enrollment.otpauthUri,
  secret: enrollment.secret,
});

/** An API key in lists: never its secret. */
export function apiKeyView(key: ApiKeyRecord): ApiKeyView {
  return {
    api_key_id: key.id,
    label: key.label,
    scopes: key.scopes,
    prefix: key.prefix,
    created_at: key.createdAt,
    expires_at: key.expiresAt,
    last_used_at: key.lastUsedAt,
  };
}

/** A key just created: the one answer that carries its secret. */
export const apiKeyCreatedView = (issued: IssuedApiKey): ApiKeyCreated => ({ ...apiKeyView(issued.key), secret: issued.secret });

export const deletionRequestView = (opened: DeletionRequestRecord): DeletionRequest => ({
  request_id: opened.id,
  state: 'PENDING' as const,
  requested_at: opened.requestedAt,
});

export const auditEntryView = (entry: AuditRecord): AuditLogEntry => ({
  id: entry.id,
  at: entry.at,
  actor_account_id: entry.actorAccountId,
  action: entry.action,
  subject: entry.subject,
  detail: entry.detail,
});

/** Agent registration, step 1: the message for the wallet to sign and the terms it accepts. */
export const agentChallengeView = (challenge: RegistrationChallenge): AgentChallenge => ({
  message: challenge.message,
  expires_at: challenge.expiresAt.toISOString(),
  terms_version: challenge.termsVersion,
  terms_url: challenge.termsUrl,
});

/** Agent registration, step 2: the agent's account, its renter key (secret shown once) and its wallet. */
export const agentRegistrationView = (registered: {
  account: AccountRecord;
  wallet: AgentWalletRecord;
  apiKey: IssuedApiKey;
  accountCreated: boolean;
}): AgentRegistration => ({
  account: accountView(registered.account, 'api-key'),
  api_key: apiKeyCreatedView(registered.apiKey),
  wallet_address: registered.wallet.address,
  agent: { name: registered.wallet.agentName, vendor: registered.wallet.agentVendor, model: registered.wallet.agentModel },
  account_created: registered.accountCreated,
});

export const walletStepUpChallengeView = (challenge: WalletStepUpChallengeRecord): WalletStepUpChallenge => ({
  message: challenge.message,
  expires_at: challenge.expiresAt.toISOString(),
  wallet_address: challenge.walletAddress,
});

/** The account's spend-rate cap and what its unstopped jobs commit against it (issue 10 item 5). */
export const spendCapView = (standing: SpendCapStanding): SpendCap => ({
  cap_micro_per_hour: standing.capMicroPerHour.toString(),
  default_cap_micro_per_hour: standing.defaultCapMicroPerHour.toString(),
  is_default: standing.isDefault,
  committed_micro_per_hour: standing.committedMicroPerHour.toString(),
  available_micro_per_hour: standing.availableMicroPerHour.toString(),
});

// ---- what `ark-cp` prints (no HTTP route answers these)

/** `accounts create`: the account, with `initial_password` when one was generated. */
export const operatorAccountView = (account: AccountRecord, initialPassword: string | null) => ({
  account_id: account.id,
  email: account.email,
  role: account.role,
  name: account.name,
  email_verified: account.emailVerified,
  created_at: account.createdAt,
  ...(initialPassword !== null ? { initial_password: initialPassword } : {}),
});

/** `keys create`: the secret, printed once, and the scopes as the operator asked for them. */
export const operatorKeyView = (issued: IssuedApiKey, scopes: readonly ApiKeyScope[]) => ({
  api_key_id: issued.key.id,
  secret: issued.secret,
  scopes,
  label: issued.key.label,
  account_id: issued.key.accountId,
  expires_at: issued.key.expiresAt,
});

/** `accounts spend-cap`: whose cap, and the cap. */
export const operatorSpendCapView = (account: AccountRecord, standing: SpendCapStanding) => ({
  account_id: account.id,
  email: account.email,
  ...spendCapView(standing),
});

/** `hosts block|unblock`: the account's hosting block as set. */
export const hostingBlockView = (account: AccountRecord, blocked: boolean, hostEnabled: boolean) => ({
  account_id: account.id,
  email: account.email,
  hosting_blocked: blocked,
  host_enabled: hostEnabled,
});

/** The provider's callback: a session (signed in, linked or created), or this session stepped up. */
export const oauthCallbackView = (done: CallbackOutcome, provider: OAuthProviderName): OAuthCallbackResult =>
  done.outcome === 'stepped-up'
    ? { outcome: done.outcome, account_id: done.accountId, provider, expires_at: done.expiresAt }
    : { outcome: done.outcome, account_id: done.accountId, provider, session_token: done.sessionToken, expires_at: done.expiresAt };

export const oauthStepUpStartedView = (started: { authorizationUrl: URL; expiresAt: Date }): OAuthStepUpStarted => ({
  authorization_url: started.authorizationUrl.href,
  expires_at: started.expiresAt.toISOString(),
});
