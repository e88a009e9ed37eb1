// The few parts of oidc-provider 8.x (no bundled types) the tests use: a provider for one issuer whose Node request
// handler serves discovery, authorization, token, userinfo and keys (subsystem-tests.test.ts, oauth-sign-in.test.ts),
// with the interaction API that finishes a login and consent without a form (oauth-helpers.ts).
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  export interface ClaimsOwner {
    accountId: string;
    claims(): Record<string, unknown> | Promise<Record<string, unknown>>;
  }

  export interface ProviderConfiguration {
    clients?: Array<{
      client_id: string;
      client_secret?: string;
      redirect_uris?: string[];
      token_endpoint_auth_method?: string;
      grant_types?: string[];
      response_types?: string[];
    }>;
    cookies?: { keys?: string[] };
    claims?: Record<string, string[] | null>;
    scopes?: string[];
    findAccount?: (ctx: unknown, id: string) => Promise<ClaimsOwner | undefined> | ClaimsOwner | undefined;
    features?: Record<string, { enabled?: boolean } & Record<string, unknown>>;
    interactions?: { url?: (ctx: unknown, interaction: { uid: string }) => string };
    pkce?: { required?: () => boolean };
    conformIdTokenClaims?: boolean;
  }

  export interface InteractionDetails {
    uid: string;
    prompt: { name: string; details: Record<string, unknown> };
    params: Record<string, string | undefined>;
  }

  export class Grant {
    constructor(properties: { accountId: string; clientId: string });
    addOIDCScope(scope: string): void;
    addOIDCClaims(claims: string[]): void;
    save(): Promise<string>;
  }

  export default class Provider {
    constructor(issuer: string, configuration?: ProviderConfiguration);
    callback(): (request: IncomingMessage, response: ServerResponse) => void;
    Grant: typeof Grant;
    interactionDetails(request: IncomingMessage, response: ServerResponse): Promise<InteractionDetails>;
    interactionFinished(
      request: IncomingMessage,
      response: ServerResponse,
      result: Record<string, unknown>,
      options?: { mergeWithLastSubmission?: boolean },
    ): Promise<void>;
    on(event: string, listener: (...args: unknown[]) => void): this;
  }
}
