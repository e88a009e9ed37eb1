import * as oidc from 'openid-client';
import type { GithubOAuthConfig, GoogleOAuthConfig, OAuthConfig, OAuthProviderName } from '../config/oauth.js';

// The sign-in providers behind one narrow interface, built on openid-client (authorization URLs with PKCE, the code
// exchange with its state, issuer and PKCE checks, OpenID Connect discovery, ID token validation against the
// provider's keys, userinfo). Nothing here parses a token by hand. The account decisions are in
// services/accounts/oauth.ts.

/** What the provider says about the person who signed in. */
export interface ProviderIdentity {
  /** The provider's stable id for the person: GitHub's numeric user id, the ID token's sub. */
  subject: string;
  /** The address the provider reports as the person's (GitHub: the primary one); null when none. */
  email: string | null;
  /** Whether the provider says it verified that address. */
  emailVerified: boolean;
  name: string | null;
}

export interface AuthorizationRequest {
  redirectUri: string;
  state: string;
  codeVerifier: string;
  /** OpenID Connect only. */
  nonce: string | null;
  /**
   * A step-up: the person must authenticate again at the provider (OpenID Connect prompt=login with max_age, the ID
   * token's auth_time checked), not ride on a session the provider already had.
   */
  fresh: boolean;
}

/** Why a callback failed at the provider: it refused (a bad code, a PKCE mismatch, a denial) or could not be reached. */
export class ProviderFailure extends Error {
  override name = 'ProviderFailure';
  constructor(
    readonly kind: 'refused' | 'unavailable',
    message: string,
  ) {
    super(message);
  }
}

export interface OAuthProviderClient {
  readonly name: OAuthProviderName;
  /** Whether its sign-ins carry an OpenID Connect nonce. */
  readonly usesNonce: boolean;
  /** Where the browser goes to approve: carries the state and the S256 challenge of the verifier. */
  authorizationUrl(request: AuthorizationRequest): Promise<URL>;
  /**
   * Checks the callback's state (and issuer), exchanges its code with the verifier, and reads who signed in; throws
   * ProviderFailure.
   */
  identify(callbackUrl: URL, request: AuthorizationRequest): Promise<ProviderIdentity>;
  /** The auth-provider subsystem test: the provider's endpoints answer, with this server's client. */
  check(): Promise<{ ok: boolean; detail: string }>;
}

/** Each request to a provider gets this long (openid-client's timeout is in seconds). */
const PROVIDER_TIMEOUT_S = 8;
/** A step-up's sign-in must have authenticated the person at the provider within this long. */
const FRESH_SIGN_IN_MAX_AGE_S = 300;
/** A discovery document is read again after this long, or at once after a failure. */
const DISCOVERY_TTL_MS = 3_600_000;

/** http:// endpoints are allowed only because the operator configured them (tests on loopback); https otherwise. */
const insecureIfHttp = (url: string) => (url.startsWith('http:') ? [oidc.allowInsecureRequests] : []);

/** The configured providers, by name. */
export function buildOAuthProviders(config: OAuthConfig): Partial<Record<OAuthProviderName, OAuthProviderClient>> {
  return {
    ...(config.github ? { github: githubProvider(config.github) } : {}),
    ...(config.google ? { google: googleProvider(config.google) } : {}),
  };
}

// ---- GitHub: OAuth 2.0 with PKCE; the identity from its REST API

interface GithubEmail {
  email: string;
  primary: boolean;
  verified: boolean;
}

export function githubProvider(settings: GithubOAuthConfig): OAuthProviderClient {
  const configuration = new oidc.Configuration(
    { issuer: new URL(settings.authorizeUrl).origin, authorization_endpoint: settings.authorizeUrl, token_endpoint: settings.tokenUrl },
    settings.clientId,
    settings.clientSecret,
    oidc.ClientSecretPost(settings.clientSecret),
  );
  configuration.timeout = PROVIDER_TIMEOUT_S;
  for (const apply of insecureIfHttp(settings.tokenUrl)) apply(configuration);
  // GitHub answers a refused code with HTTP 200 and an `error` field: seen as the 400 it means, openid-client reports
  // the error code (bad_verification_code) instead of a missing access_token.
  configuration[oidc.customFetch] = async (url, options) => {
    const response = await fetch(url, options as RequestInit);
    if (url !== settings.tokenUrl || response.status !== 200) return response;
    const text = await response.text();
    let refused = false;
    try {
      refused = typeof (JSON.parse(text) as { error?: unknown }).error === 'string';
    } catch {}
    return new Response(text, { status: refused ? 400 : 200, headers: response.headers });
  };
  const apiHeaders = new Headers({
    accept: 'application/vnd.github+json',
    'user-agent': 'ark-control-plane',
    'x-github-api-version': '2022-11-28',
  });

  const api = async <T>(accessToken: string, path: string): Promise<T> => {
    const response = await attempt(() =>
      oidc.fetchProtectedResource(configuration, accessToken, new URL(`${settings.apiUrl}${path}`), 'GET', null, apiHeaders),
    );
    if (response.status >= 500) throw new ProviderFailure('unavailable', `GitHub's API answered HTTP ${response.status} for ${path}`);
    if (response.status !== 200) throw new ProviderFailure('refused', `GitHub's API answered HTTP ${response.status} for ${path}`);
    return (await response.json()) as T;
  };

  return {
    name: 'github',
    usesNonce: false,
    async authorizationUrl(request) {
      return oidc.buildAuthorizationUrl(configuration, {
        redirect_uri: request.redirectUri,
        scope: 'read:user user:email',
        state: request.state,
        code_challenge: await oidc.calculatePKCECodeChallenge(request.codeVerifier),
        code_challenge_method: 'S256',
        allow_signup: 'true',
      });
    },
    async identify(callbackUrl, request) {
      const tokens = await attempt(() =>
        oidc.authorizationCodeGrant(
          configuration,
          callbackUrl,
          { expectedState: request.state, pkceCodeVerifier: request.codeVerifier },
          undefined,
          { redirectUri: request.redirectUri } as oidc.AuthorizationCodeGrantOptions,
        ),
      );
      const user = await api<{ id?: unknown; name?: unknown; login?: unknown }>(tokens.access_token, '/user');
      if (typeof user.id !== 'number' && typeof user.id !== 'string')
        throw new ProviderFailure('refused', 'GitHub answered a user without an id');
      const emails = await api<GithubEmail[]>(tokens.access_token, '/user/emails');
      const primary = Array.isArray(emails) ? emails.find((e) => e?.primary === true && typeof e.email === 'string') : undefined;
      return {
        subject: String(user.id),
        email: primary?.email ?? null,
        emailVerified: primary?.verified === true,
        name: typeof user.name === 'string' && user.name !== '' ? user.name : typeof user.login === 'string' ? user.login : null,
      };
    },
    async check() {
      // A made-up code with this server's client: GitHub answers bad_verification_code once it accepted the client
      // credentials, incorrect_client_credentials when it did not.
      let tokenAnswer: Record<string, unknown>;
      try {
        const response = await fetch(settings.tokenUrl, {
          method: 'POST',
          headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ client_id: settings.clientId, client_secret: settings.clientSecret, code: 'ark-subsystem-test' }),
          redirect: 'manual',
          signal: AbortSignal.timeout(PROVIDER_TIMEOUT_S * 1000),
        });
        if (response.status >= 300 && response.status !== 400 && response.status !== 401) {
          await response.body?.cancel().catch(() => {});
          return { ok: false, detail: `GitHub's token endpoint ${settings.tokenUrl} answered HTTP ${response.status}` };
        }
        tokenAnswer = (await response.json()) as Record<string, unknown>;
      } catch (error) {
        return { ok: false, detail: `GitHub's token endpoint ${settings.tokenUrl} could not be reached: ${fetchFailure(error)}` };
      }
      if (tokenAnswer.error !== 'bad_verification_code') {
        return {
          ok: false,
          detail: `GitHub's token endpoint ${settings.tokenUrl} refused this server's client (${String(tokenAnswer.error ?? 'no error code')}): check ARK_OAUTH_GITHUB_CLIENT_ID and _SECRET`,
        };
      }
      try {
        const response = await fetch(`${settings.apiUrl}/user`, {
          headers: Object.fromEntries(apiHeaders),
          redirect: 'manual',
          signal: AbortSignal.timeout(PROVIDER_TIMEOUT_S * 1000),
        });
        await response.body?.cancel().catch(() => {});
        // Without a token the API answers 401: it is there and asks for one.
        if (response.status !== 401)
          return { ok: false, detail: `GitHub's API ${settings.apiUrl} answered HTTP ${response.status} for /user without a token` };
      } catch (error) {
        return { ok: false, detail: `GitHub's API ${settings.apiUrl} could not be reached: ${fetchFailure(error)}` };
      }
      return {
        ok: true,
        detail: `GitHub's token endpoint ${settings.tokenUrl} accepted this server's client (a made-up code was refused as bad_verification_code) and its API ${settings.apiUrl} answered`,
      };
    },
  };
}

// ---- Google: OpenID Connect through discovery; the identity from the validated ID token (userinfo for what it lacks)

export function googleProvider(settings: GoogleOAuthConfig): OAuthProviderClient {
  let cached: { at: number; configuration: Promise<oidc.Configuration> } | null = null;
  const discover = (): Promise<oidc.Configuration> => {
    const now = Date.now();
    if (cached === null || now - cached.at > DISCOVERY_TTL_MS) {
      const configuration = oidc
        .discovery(new URL(settings.issuer), settings.clientId, settings.clientSecret, oidc.ClientSecretPost(settings.clientSecret), {
          execute: insecureIfHttp(settings.issuer),
          timeout: PROVIDER_TIMEOUT_S,
        })
        .then((discovered) => {
          discovered.timeout = PROVIDER_TIMEOUT_S;
          return discovered;
        });
      const entry = { at: now, configuration };
      cached = entry;
      // A failed discovery is not kept: the next sign-in tries again.
      configuration.catch(() => {
        if (cached === entry) cached = null;
      });
    }
    return cached.configuration;
  };

  return {
    name: 'google',
    usesNonce: true,
    async authorizationUrl(request) {
      const configuration = await attempt(discover);
      return oidc.buildAuthorizationUrl(configuration, {
        redirect_uri: request.redirectUri,
        scope: 'openid email profile',
        state: request.state,
        nonce: request.nonce ?? '',
        code_challenge: await oidc.calculatePKCECodeChallenge(request.codeVerifier),
        code_challenge_method: 'S256',
        ...(request.fresh ? { prompt: 'login', max_age: String(FRESH_SIGN_IN_MAX_AGE_S) } : {}),
      });
    },
    async identify(callbackUrl, request) {
      const configuration = await attempt(discover);
      const tokens = await attempt(() =>
        oidc.authorizationCodeGrant(
          configuration,
          callbackUrl,
          {
            expectedState: request.state,
            pkceCodeVerifier: request.codeVerifier,
            expectedNonce: request.nonce ?? undefined,
            idTokenExpected: true,
            // A step-up: the ID token must say the person authenticated within the last few minutes.
            ...(request.fresh ? { maxAge: FRESH_SIGN_IN_MAX_AGE_S } : {}),
          },
          undefined,
          { redirectUri: request.redirectUri } as oidc.AuthorizationCodeGrantOptions,
        ),
      );
      const claims = tokens.claims();
      if (!claims) throw new ProviderFailure('refused', 'the provider answered no ID token');
      let email = claims.email;
      let verified = claims.email_verified;
      let name = claims.name;
      // Providers may put the email only in userinfo (a code flow's ID token need not carry scope claims).
      if (typeof email !== 'string') {
        const info = await attempt(() => oidc.fetchUserInfo(configuration, tokens.access_token, claims.sub));
        ({ email, email_verified: verified, name } = info);
      }
      return {
        subject: claims.sub,
        email: typeof email === 'string' ? email : null,
        emailVerified: verified === true,
        name: typeof name === 'string' && name !== '' ? name : null,
      };
    },
    async check() {
      let configuration: oidc.Configuration;
      try {
        // Always a fresh read: the test is about the provider now.
        cached = null;
        configuration = await discover();
      } catch (error) {
        return {
          ok: false,
          detail: `the OpenID provider ${settings.issuer} did not answer a valid discovery document: ${fetchFailure(error)}`,
        };
      }
      const metadata = configuration.serverMetadata();
      const missing = (['authorization_endpoint', 'token_endpoint', 'jwks_uri'] as const).filter(
        (field) => typeof metadata[field] !== 'string',
      );
      if (missing.length > 0) return { ok: false, detail: `the discovery document of ${settings.issuer} lacks ${missing.join(', ')}` };
      try {
        const response = await fetch(String(metadata.jwks_uri), {
          headers: { accept: 'application/json' },
          redirect: 'manual',
          signal: AbortSignal.timeout(PROVIDER_TIMEOUT_S * 1000),
        });
        const jwks = response.status === 200 ? ((await response.json()) as { keys?: unknown }) : null;
        if (jwks === null) await response.body?.cancel().catch(() => {});
        const keys = Array.isArray(jwks?.keys) ? jwks.keys.length : 0;
        if (keys === 0)
          return { ok: false, detail: `the signing keys of ${settings.issuer} (jwks_uri) answered HTTP ${response.status} with no key` };
        return {
          ok: true,
          detail: `the OpenID provider ${settings.issuer} answered its discovery document (token endpoint ${String(metadata.token_endpoint)}) and ${keys} signing key${keys === 1 ? '' : 's'}`,
        };
      } catch (error) {
        return { ok: false, detail: `the signing keys of ${settings.issuer} could not be read: ${fetchFailure(error)}` };
      }
    },
  };
}

/** Runs a provider call, sorting its failures: could not reach (or a 5xx) is unavailable, any other answer refused. */
async function attempt<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof ProviderFailure) throw error;
    const status = (error as { status?: unknown }).status;
    const network = error instanceof TypeError || (error as Error)?.name === 'TimeoutError' || (error as Error)?.name === 'AbortError';
    const cause = (error as { cause?: unknown }).cause;
    const networkCause = cause instanceof TypeError || (cause as Error)?.name === 'TimeoutError';
    if (network || networkCause || (typeof status === 'number' && status >= 500)) {
      throw new ProviderFailure('unavailable', `the provider could not be reached: ${fetchFailure(error)}`);
    }
    const err = error as { error?: unknown; error_description?: unknown; message?: string };
    const reason =
      typeof err.error === 'string'
        ? `${err.error}${typeof err.error_description === 'string' ? `: ${err.error_description}` : ''}`
        : err.message;
    throw new ProviderFailure('refused', redact(String(reason ?? error)));
  }
}

/** A fetch failure in words: the errno code when there is one (ECONNREFUSED), never a URL. */
function fetchFailure(error: unknown): string {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return code;
    current = (current as { cause?: unknown }).cause;
  }
  if ((error as Error)?.name === 'TimeoutError') return `no answer within ${PROVIDER_TIMEOUT_S} s`;
  return redact((error as Error)?.message ?? String(error));
}

function redact(text: string): string {
  return text.replace(/[a-z][a-z0-9+.-]*:\/\/\S+/gi, '<url>').slice(0, 300);
}
