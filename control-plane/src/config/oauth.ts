// Sign-in with GitHub and Google (issue 13 item 4). Read once by loadConfig; a bad value stops the server with exit
// code 2 and a message naming the variable. A provider is on when both its client id and secret are set; the URLs
// default to the real providers and can point anywhere (tests point them at servers on loopback).

export type OAuthProviderName = 'github' | 'google';

/** GitHub: plain OAuth 2.0 (no OpenID Connect), so its three endpoints are configured one by one. */
export interface GithubOAuthConfig {
  clientId: string;
  clientSecret: string;
  /** ARK_OAUTH_GITHUB_AUTHORIZE_URL: where the browser is sent to approve. */
  authorizeUrl: string;
  /** ARK_OAUTH_GITHUB_TOKEN_URL: where the code is exchanged. */
  tokenUrl: string;
  /** ARK_OAUTH_GITHUB_API_URL: serves GET /user and GET /user/emails. */
  apiUrl: string;
}

/** Google: OpenID Connect, everything found through the issuer's discovery document. */
export interface GoogleOAuthConfig {
  clientId: string;
  clientSecret: string;
  /** ARK_OAUTH_GOOGLE_ISSUER: the issuer whose /.well-known/openid-configuration is read. */
  issuer: string;
}

export interface OAuthConfig {
  github: GithubOAuthConfig | null;
  google: GoogleOAuthConfig | null;
  /** ARK_OAUTH_STATE_TTL_S: how long a started sign-in may take before its callback is refused. */
  stateTtlMs: number;
}

type Env = Record<string, string | undefined>;
/** loadConfig's integer reader: the variable's value, its default, and its bounds (a bad value stops the start). */
type IntOf = (name: string, fallback: number, min: number, max: number) => number;

export function oauthConfigFrom(env: Env, int: IntOf, fail: (message: string) => Error): OAuthConfig {
  // The single issuer of the first subsystem test; the providers now have their own variables.
  if (env.ARK_OIDC_ISSUER) {
    throw fail('ARK_OIDC_ISSUER is no longer read: set ARK_OAUTH_GOOGLE_ISSUER with ARK_OAUTH_GOOGLE_CLIENT_ID and _SECRET instead');
  }
  const url = (name: string, fallback: string): string => {
    const raw = env[name] || fallback;
    let parsed: URL;
    try {
      parsed = new URL(raw);
    } catch {
      throw fail(`${name} must be an absolute http(s) URL, got "${raw}"`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw fail(`${name} must be an http(s) URL, got "${raw}"`);
    if (parsed.username || parsed.password) throw fail(`${name} must not carry credentials in the URL`);
    if (parsed.search || parsed.hash) throw fail(`${name} must not carry a query or fragment, got "${raw}"`);
    return raw.replace(/\/$/, '');
  };
  /** Both halves of a client or neither: one alone is a typo, not a choice. */
  const client = (prefix: string): { clientId: string; clientSecret: string } | null => {
    const clientId = env[`${prefix}_CLIENT_ID`] ?? '';
    const clientSecret = env[`${prefix}_CLIENT_SECRET`] ?? '';
    if (clientId === '' && clientSecret === '') return null;
    if (clientId === '') throw fail(`${prefix}_CLIENT_ID must be set when ${prefix}_CLIENT_SECRET is`);
    if (clientSecret === '') throw fail(`${prefix}_CLIENT_SECRET must be set when ${prefix}_CLIENT_ID is`);
    if (!/^[\x21-\x7e]{1,256}$/.test(clientId)) throw fail(`${prefix}_CLIENT_ID must be 1 to 256 visible ASCII characters`);
    if (!/^[\x21-\x7e]{1,512}$/.test(clientSecret)) throw fail(`${prefix}_CLIENT_SECRET must be 1 to 512 visible ASCII characters`);
    return { clientId, clientSecret };
  };
  const github = client('ARK_OAUTH_GITHUB');
  const google = client('ARK_OAUTH_GOOGLE');
  // The URLs are checked even for a provider that is off, so a typo shows at once rather than on the day it is enabled.
  const githubUrls = {
    authorizeUrl: url('ARK_OAUTH_GITHUB_AUTHORIZE_URL', 'https://github.com/login/oauth/authorize'),
    tokenUrl: url('ARK_OAUTH_GITHUB_TOKEN_URL', 'https://github.com/login/oauth/access_token'),
    apiUrl: url('ARK_OAUTH_GITHUB_API_URL', 'https://api.github.com'),
  };
  const googleIssuer = url('ARK_OAUTH_GOOGLE_ISSUER', 'https://accounts.google.com');
  return {
    github: github && { ...github, ...githubUrls },
    google: google && { ...google, issuer: googleIssuer },
    stateTtlMs: int('ARK_OAUTH_STATE_TTL_S', 600, 30, 3600) * 1000,
  };
}

/** The providers that are on, in a fixed order. */
export function configuredProviders(config: OAuthConfig): OAuthProviderName[] {
  return (['github', 'google'] as const).filter((name) => config[name] !== null);
}
