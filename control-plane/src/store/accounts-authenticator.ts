import {
  type Authenticator,
  type CredentialKind,
  type Principal,
  type Scope,
  type StepUpKind,
  stepUpCounts,
} from '../domain/accounts/principal.js';
import { hashToken, tokenKind } from '../domain/accounts/tokens.js';
import type { AccountRow } from './accounts.js';
import { touchApiKey } from './accounts-credentials.js';
import {
  type CachedCredential,
  type CredentialLookupHandle,
  type CredentialRow,
  openCredentialLookup,
} from './accounts-credential-cache.js';
import type { Store } from './db.js';

/** last_used_at is refreshed at most this often, so the hot path stays a single read. */
const LAST_USED_GRANULARITY_MS = 60_000;

/** The account row read while authenticating, kept on the principal (a symbol property: cheaper than a WeakMap entry). */
const ACCOUNT_ROW = Symbol('accountRow');
type PrincipalWithRow = Principal & { [ACCOUNT_ROW]?: AccountRow };

/** The account row read while authenticating this principal, so the account view needs no second query. */
export function accountOfPrincipal(principal: Principal): AccountRow | undefined {
  return (principal as PrincipalWithRow)[ACCOUNT_ROW];
}

export interface AccountAuthenticator extends Authenticator {
  /** Releases the dedicated read connection (SQLite); call before closing the store. */
  close(): void;
}

/**
 * Resolves bearer tokens: `ars_` sessions and `ark_` API keys. One indexed lookup by the token's sha256 joined
 * with its account; no KDF on this path (tokens carry 256 random bits, so a plain hash is enough).
 */
export function createAccountAuthenticator(
  store: Store,
  /** Tests only: how often other connections' commits are asked for (openCredentialLookup). */
  options: { foreignCommitCheckMs?: number } = {},
): AccountAuthenticator {
  let opening: Promise<CredentialLookupHandle> | null = null;
  let handle: CredentialLookupHandle | null = null;
  let closed = false;

  const verify = (kind: CredentialKind, found: CachedCredential | undefined, now: Date): Principal | null | Promise<Principal> => {
    const nowMs = now.getTime();
    if (!found || found.revoked || found.expiresAtMs <= nowMs) return null;
    const { row, scopes, stepUpUntilMs, lastUsedMs } = found;
    const stepUpMethod = row.credential_step_up_method as StepUpKind;
    const stepUp =
      stepUpUntilMs !== null && stepUpUntilMs > nowMs && stepUpCounts(kind, stepUpMethod)
        ? { until: new Date(stepUpUntilMs), method: stepUpMethod }
        : null;
    const principal = principalFrom(row, kind, scopes, stepUp);
    if (kind === 'session' || (lastUsedMs !== null && lastUsedMs + LAST_USED_GRANULARITY_MS > nowMs)) return principal;
    // This commit changes data_version, so the cached row (with the old last_used_at) is dropped.
    return touchApiKey(store.db, row.credential_id, now).then(() => principal);
  };

  const resolve = (lookup: CredentialLookupHandle, kind: CredentialKind, token: string, now: Date) => {
    const found = lookup.lookup(kind, hashToken(token), now.getTime());
    return found instanceof Promise ? found.then((f) => verify(kind, f, now)) : verify(kind, found, now);
  };

  return {
    authenticate(token, now) {
      const kind = tokenKind(token);
      if (kind === null || closed) return null;
      if (handle) return resolve(handle, kind, token, now);
      opening ??= openCredentialLookup(store, options);
      return opening.then((opened) => {
        if (closed) return null;
        handle = opened;
        return resolve(opened, kind, token, now);
      });
    },
    close() {
      closed = true;
      opening?.then((lookup) => lookup.close()).catch(() => {});
    },
  };
}

function principalFrom(row: CredentialRow, authMethod: CredentialKind, scopes: ReadonlySet<Scope>, stepUp: Principal['stepUp']): Principal {
  const principal: PrincipalWithRow = {
    accountId: row.id,
    role: row.role,
    authMethod,
    credentialId: row.credential_id,
    scopes,
    emailVerified: row.email_verified_at !== null,
    accountKind: row.account_kind,
    stepUp,
  };
  // Set after the literal: a computed key in an object literal is defined through a runtime call on every request.
  principal[ACCOUNT_ROW] = row;
  return principal;
}
