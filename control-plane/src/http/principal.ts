export type Scope = 'renter' | 'host';
export type Role = 'renter' | 'host' | 'admin';

/** Who is calling, resolved once per request by the auth plugin. */
export interface Principal {
  accountId: string;
  role: Role;
  authMethod: 'session' | 'api-key';
  /** The session or API key row that authenticated this request. */
  credentialId: string;
  /** Sessions carry every non-admin scope; keys carry what they were created with. */
  scopes: ReadonlySet<Scope>;
  emailVerified: boolean;
  accountKind: 'human' | 'agent';
  /** The latest step-up on this credential, if still fresh. */
  stepUp: { until: Date; method: 'password' | 'totp' | 'wallet' } | null;
}

/** What a route needs from its caller; declared in the route's `config.auth`. */
export type AuthRequirement =
  | 'public'
  | {
      scope?: Scope;
      /** Interactive admin session (API keys never qualify). */
      admin?: boolean;
      /** A fresh step-up on this credential; 'totp' demands the TOTP kind. */
      stepUp?: 'any' | 'totp';
      /** Verified email or wallet-created account. */
      verified?: boolean;
      /** Interactive session only (no API key). */
      session?: boolean;
    };

export interface Authenticator {
  /** May answer without a promise (a credential verified from memory), so the request need not wait a turn. */
  authenticate(bearerToken: string, now: Date): Principal | null | Promise<Principal | null>;
}
