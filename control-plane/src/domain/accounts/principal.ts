export type Scope = 'renter' | 'host';
export type Role = 'renter' | 'host' | 'admin';
/** oauth: a fresh sign-in with a provider identity linked to the account (services/accounts/oauth.ts). */
export type StepUpKind = 'password' | 'totp' | 'wallet' | 'oauth';
export type CredentialKind = 'session' | 'api-key';

/** The session or API key that acts: step-ups are bound to it, and hosting rules read its scopes. */
export interface Credential {
  kind: CredentialKind;
  id: string;
}

/** Who is calling, resolved once per request by the edge's authentication. */
export interface Principal {
  accountId: string;
  role: Role;
  authMethod: CredentialKind;
  /** The session or API key row that authenticated this request. */
  credentialId: string;
  /** Sessions carry the scopes of what the account does (sessionScopes); keys carry what they were created with. */
  scopes: ReadonlySet<Scope>;
  emailVerified: boolean;
  accountKind: 'human' | 'agent';
  /** The latest step-up on this credential, if still fresh. */
  stepUp: { until: Date; method: StepUpKind } | null;
}

const RENTER_ONLY: ReadonlySet<Scope> = new Set<Scope>(['renter']);
const RENTER_AND_HOST: ReadonlySet<Scope> = new Set<Scope>(['renter', 'host']);

/**
 * A session's scopes: renter for everyone (anyone may rent and hold a balance), host once the account hosts (signed
 * up as a host, or hosting turned on by its first enrollment token or pairing approval) and for admins. A renter who
 * never hosted reads no host market statistics; a session may still turn hosting on (routes with `orSession`).
 */
export function sessionScopes(account: { role: Role; hostEnabled: boolean }): ReadonlySet<Scope> {
  return account.role !== 'renter' || account.hostEnabled ? RENTER_AND_HOST : RENTER_ONLY;
}

/**
 * Whether a step-up recorded on a credential counts. A session's does, whatever the proof. An API key's counts only
 * when its account's sign-in wallet signed it (agent accounts): a password or TOTP code is typed by a person into an
 * interactive session, and a key stepped up with one would let whoever holds the key move money for the step-up's
 * lifetime (restricted keys never escalate).
 */
export function stepUpCounts(kind: CredentialKind, method: StepUpKind): boolean {
  return kind === 'session' || method === 'wallet';
}

/** The credential a principal acted with. */
export const credentialOf = (principal: Principal): Credential => ({ kind: principal.authMethod, id: principal.credentialId });

export interface Authenticator {
  /** May answer without a promise (a credential verified from memory), so the request need not wait a turn. */
  authenticate(bearerToken: string, now: Date): Principal | null | Promise<Principal | null>;
}
