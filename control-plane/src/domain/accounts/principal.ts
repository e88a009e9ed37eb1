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
  /** Sessions carry every non-admin scope; keys carry what they were created with. */
  scopes: ReadonlySet<Scope>;
  emailVerified: boolean;
  accountKind: 'human' | 'agent';
  /** The latest step-up on this credential, if still fresh. */
  stepUp: { until: Date; method: StepUpKind } | null;
}

/** The credential a principal acted with. */
export const credentialOf = (principal: Principal): Credential => ({ kind: principal.authMethod, id: principal.credentialId });

export interface Authenticator {
  /** May answer without a promise (a credential verified from memory), so the request need not wait a turn. */
  authenticate(bearerToken: string, now: Date): Principal | null | Promise<Principal | null>;
}
