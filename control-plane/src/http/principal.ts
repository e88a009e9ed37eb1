import type { Scope } from '../domain/accounts/principal.js';

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
