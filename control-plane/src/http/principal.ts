import type { Scope } from '../domain/accounts/principal.js';

/** Resources whose owner the auth plumbing can look up from the path's `:id` (http/owner-first.ts). */
export type OwnedResource = 'machine';

/** What a route needs from its caller; declared in the route's `config.auth`. */
export type AuthRequirement =
  | 'public'
  | {
      scope?: Scope;
      /**
       * The path's `:id` names a resource of this kind: a caller without the scope who neither owns it nor acts as
       * an admin gets 404, never 403 (http/owner-first.ts). The route still checks ownership itself.
       */
      owner?: OwnedResource;
      /**
       * With `scope`: any interactive session passes instead of the scope (the routes that turn hosting on: a session
       * may start hosting; an API key needs the host scope).
       */
      orSession?: boolean;
      /**
       * The scope depends on the body (money out: the balance drawn names it), so the handler checks it with
       * `requireScope` once the body is parsed; declared so the API reference says so.
       */
      scopeInBody?: boolean;
      /** Interactive admin session (API keys never qualify). */
      admin?: boolean;
      /** A fresh step-up on this credential; 'totp' demands the TOTP kind. */
      stepUp?: 'any' | 'totp';
      /** Verified email or wallet-created account. */
      verified?: boolean;
      /** Interactive session only (no API key). */
      session?: boolean;
    };
