// Sign-in with GitHub and Google. Timestamps ISO text.

export type OAuthProviderColumn = 'github' | 'google';

/** A provider account linked to an Ark account. */
export interface OAuthIdentitiesTable {
  id: string;
  provider: OAuthProviderColumn;
  /** The provider's stable user id (GitHub's numeric id, the ID token's sub). */
  subject: string;
  account_id: string;
  email: string;
  created_at: string;
  last_sign_in_at: string;
}

/** A sign-in started at the provider and not yet finished. */
export interface OAuthAuthorizationsTable {
  /** SHA-256 of the state sent to the provider. */
  state_hash: string;
  provider: OAuthProviderColumn;
  purpose: 'sign-in' | 'step-up';
  /** The PKCE verifier: only its S256 challenge left this server. */
  code_verifier: string;
  /** The OpenID Connect nonce (Google); null for GitHub. */
  nonce: string | null;
  /** SHA-256 of the cookie set on the browser that started a sign-in; null for a step-up. */
  browser_binding_hash: string | null;
  /** The session a step-up is for; null for a sign-in. */
  session_id: string | null;
  account_id: string | null;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

export interface OAuthTables {
  oauth_identities: OAuthIdentitiesTable;
  oauth_authorizations: OAuthAuthorizationsTable;
}
