import { randomBytes } from 'node:crypto';
import type { OAuthProviderName } from '../../config/oauth.js';
import { iso } from '../../clock.js';
import { normalizeEmail } from '../../domain/accounts/account.js';
import { decideProviderSignIn } from '../../domain/accounts/oauth.js';
import type { Principal } from '../../domain/accounts/principal.js';
import { hashToken } from '../../domain/accounts/tokens.js';
import { DomainError } from '../../errors.js';
import { type OAuthProviderClient, ProviderFailure, type ProviderIdentity } from '../../oauth/providers.js';
import { findAccountByEmail, findAccountById, insertAccount } from '../../store/accounts.js';
import { recordStepUp } from '../../store/accounts-credentials.js';
import { issueSession } from './credentials.js';
import { appendAudit } from '../../store/audit.js';
import {
  findIdentity,
  insertAuthorization,
  insertIdentity,
  type OAuthAuthorizationRow,
  pruneAuthorizations,
  takeAuthorization,
  touchIdentity,
} from '../../store/oauth.js';
import { transact } from '../../store/transaction.js';
import type { AccountDeps } from './deps.js';

// Sign-in with GitHub and Google (issue 13 item 4). A start stores the state (by its hash), the PKCE verifier and the
// nonce server-side, and binds a sign-in to the browser that started it with a cookie; the callback takes that row
// once, lets the provider client (openid-client) exchange the code and check the answer, then links or creates the
// account and issues the same session a password sign-in issues. A step-up is started by a session and finished by
// a fresh sign-in with an identity already linked to that session's account.

const random43 = (): string => randomBytes(32).toString('base64url');

export interface StartedAuthorization {
  authorizationUrl: URL;
  /** The cookie value that binds a sign-in to its browser; null for a step-up. */
  browserBinding: string | null;
  expiresAt: Date;
}

export type CallbackOutcome =
  | { outcome: 'created' | 'linked' | 'signed-in'; accountId: string; sessionToken: string; expiresAt: string }
  | { outcome: 'stepped-up'; accountId: string; expiresAt: string };

export const oauthRedirectUri = (deps: AccountDeps, provider: OAuthProviderName): string =>
  `${deps.settings.publicBaseUrl}/api/v1/auth/oauth/${provider}/callback`;

function providerOf(deps: AccountDeps, provider: OAuthProviderName): OAuthProviderClient {
  const client = deps.oauthProviders[provider];
  if (!client) {
    const variable = `ARK_OAUTH_${provider.toUpperCase()}_CLIENT_ID`;
    throw new DomainError(
      'OAUTH_PROVIDER_NOT_CONFIGURED',
      `Sign-in with ${provider} is not configured on this server (${variable} is not set).`,
    );
  }
  return client;
}

const providerError = (error: unknown): unknown => {
  if (!(error instanceof ProviderFailure)) return error;
  if (error.kind === 'unavailable') return new DomainError('OAUTH_PROVIDER_UNAVAILABLE');
  return new DomainError('OAUTH_PROVIDER_REFUSED', `The provider refused the sign-in: ${error.message}`);
};

/** A sign-in at a provider, for the browser that asks: it is sent to the URL, holding the binding cookie. */
export function startSignIn(deps: AccountDeps, provider: OAuthProviderName): Promise<StartedAuthorization> {
  return start(deps, provider, { purpose: 'sign-in', sessionId: null, accountId: null });
}

/**
 * A step-up of the calling session by a fresh sign-in at the provider, with an identity linked to its account. An
 * account with TOTP steps up with TOTP only, as it does instead of its password.
 */
export async function startStepUp(deps: AccountDeps, provider: OAuthProviderName, principal: Principal): Promise<StartedAuthorization> {
  const client = providerOf(deps, provider);
  const account = await findAccountById(deps.store.db, principal.accountId);
  if (!account) throw new DomainError('UNAUTHENTICATED');
  if (account.totp_secret_sealed !== null) throw new DomainError('STEP_UP_TOTP_REQUIRED');
  const linked = await deps.store.db
    .selectFrom('oauth_identities')
    .select('id')
    .where('account_id', '=', account.id)
    .where('provider', '=', client.name)
    .executeTakeFirst();
  if (!linked) throw new DomainError('OAUTH_IDENTITY_NOT_LINKED', `No ${provider} account is linked to your account.`);
  return start(deps, provider, { purpose: 'step-up', sessionId: principal.credentialId, accountId: account.id });
}

async function start(
  deps: AccountDeps,
  provider: OAuthProviderName,
  target: { purpose: 'sign-in' | 'step-up'; sessionId: string | null; accountId: string | null },
): Promise<StartedAuthorization> {
  const client = providerOf(deps, provider);
  const now = deps.clock.now();
  const expiresAt = new Date(now.getTime() + deps.settings.oauth.stateTtlMs);
  const state = random43();
  // 32 random bytes, base64url: a 43-character PKCE verifier (RFC 7636 asks for 43 to 128).
  const codeVerifier = random43();
  const nonce = client.usesNonce ? random43() : null;
  const browserBinding = target.purpose === 'sign-in' ? random43() : null;
  let authorizationUrl: URL;
  try {
    authorizationUrl = await client.authorizationUrl({
      redirectUri: oauthRedirectUri(deps, provider),
      state,
      codeVerifier,
      nonce,
      fresh: target.purpose === 'step-up',
    });
  } catch (error) {
    throw providerError(error);
  }
  const row: OAuthAuthorizationRow = {
    state_hash: hashToken(state),
    provider,
    purpose: target.purpose,
    code_verifier: codeVerifier,
    nonce,
    browser_binding_hash: browserBinding === null ? null : hashToken(browserBinding),
    session_id: target.sessionId,
    account_id: target.accountId,
    created_at: iso(now),
    expires_at: iso(expiresAt),
    used_at: null,
  };
  await insertAuthorization(deps.store.db, row);
  await pruneAuthorizations(deps.store.db, now);
  return { authorizationUrl, browserBinding, expiresAt };
}

/**
 * The provider's redirect back: `callbackUrl` is the full URL it called (state, code, issuer), `browserBinding` the
 * cookie the browser sent. The started sign-in is used up whatever happens next.
 */
export async function finishAuthorization(
  deps: AccountDeps,
  provider: OAuthProviderName,
  callbackUrl: URL,
  browserBinding: string | null,
): Promise<CallbackOutcome> {
  const client = providerOf(deps, provider);
  const now = deps.clock.now();
  const state = callbackUrl.searchParams.get('state');
  const row = state ? await takeAuthorization(deps.store.db, hashToken(state), now) : undefined;
  if (!row || row.provider !== provider) throw new DomainError('OAUTH_STATE_INVALID');
  if (row.purpose === 'sign-in' && (browserBinding === null || hashToken(browserBinding) !== row.browser_binding_hash)) {
    throw new DomainError('OAUTH_STATE_INVALID');
  }
  let identity: ProviderIdentity;
  try {
    identity = await client.identify(callbackUrl, {
      redirectUri: oauthRedirectUri(deps, provider),
      state: state as string,
      codeVerifier: row.code_verifier,
      nonce: row.nonce,
      fresh: row.purpose === 'step-up',
    });
  } catch (error) {
    throw providerError(error);
  }
  return row.purpose === 'step-up' ? finishStepUp(deps, row, identity) : finishSignIn(deps, provider, identity);
}

async function finishStepUp(deps: AccountDeps, row: OAuthAuthorizationRow, identity: ProviderIdentity): Promise<CallbackOutcome> {
  const now = deps.clock.now();
  const linked = await findIdentity(deps.store.db, row.provider, identity.subject);
  if (!linked || linked.account_id !== row.account_id || row.session_id === null) {
    throw new DomainError('OAUTH_IDENTITY_NOT_LINKED', `This ${row.provider} account is not the one linked to your account.`);
  }
  const account = await findAccountById(deps.store.db, linked.account_id);
  if (!account) throw new DomainError('UNAUTHENTICATED');
  // TOTP enrolled since the start: TOTP only, as for a password.
  if (account.totp_secret_sealed !== null) throw new DomainError('STEP_UP_TOTP_REQUIRED');
  const until = new Date(now.getTime() + deps.settings.stepUpTtlMs);
  await transact(deps.store, async (trx) => {
    await recordStepUp(trx, { kind: 'session', id: row.session_id as string }, 'oauth', until);
    await touchIdentity(trx, linked.id, identity.email ?? linked.email, now);
  });
  return { outcome: 'stepped-up', accountId: account.id, expiresAt: iso(until) };
}

async function finishSignIn(deps: AccountDeps, provider: OAuthProviderName, identity: ProviderIdentity): Promise<CallbackOutcome> {
  const now = deps.clock.now();
  const email = identity.email === null ? null : normalizeEmail(identity.email);
  return transact(deps.store, async (trx) => {
    const linked = await findIdentity(trx, provider, identity.subject);
    const withEmail = linked || email === null ? undefined : await findAccountByEmail(trx, email);
    const decision = decideProviderSignIn(
      identity,
      linked?.account_id ?? null,
      withEmail ? { id: withEmail.id, emailVerified: withEmail.email_verified_at !== null } : null,
      email,
    );
    if ('refused' in decision) throw new DomainError(decision.refused);
    let accountId: string;
    if (decision.kind === 'signed-in') {
      accountId = decision.accountId;
      await touchIdentity(trx, (linked as { id: string }).id, email as string, now);
    } else {
      if (decision.kind === 'create') {
        const account = await insertAccount(trx, {
          email: decision.email,
          passwordHash: null,
          name: identity.name,
          role: 'renter',
          emailVerified: true,
          now,
        });
        accountId = account.id;
        await appendAudit(trx, {
          at: now,
          actorAccountId: accountId,
          action: 'account.signed_up',
          subject: accountId,
          detail: { role: 'renter', provider },
        });
      } else {
        accountId = decision.accountId;
      }
      // A concurrent callback for the same identity linked it first: this one retries as a plain sign-in.
      if (!(await insertIdentity(trx, { provider, subject: identity.subject, accountId, email: email as string, now }))) {
        throw new DomainError('OAUTH_STATE_INVALID', 'This identity was linked by another sign-in at the same moment: start again.');
      }
      await appendAudit(trx, {
        at: now,
        actorAccountId: accountId,
        action: 'account.provider_linked',
        subject: accountId,
        detail: { provider },
      });
    }
    const session = await issueSession(trx, accountId, now, deps.settings.sessionTtlMs);
    const outcome = decision.kind === 'create' ? 'created' : decision.kind === 'link' ? 'linked' : 'signed-in';
    return { outcome, accountId, sessionToken: session.token, expiresAt: session.row.expires_at } as const;
  });
}
