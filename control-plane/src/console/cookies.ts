// The console's cookies that other routes write too (the OAuth callback delivers a console sign-in's session).

/** The session token of the person signed in to the console; HttpOnly, SameSite=Strict, sent to /console only. */
export const SESSION_COOKIE = 'ark_console';
/** Set by the console's "sign in with" link on the provider's callback path: deliver the session to the console. */
export const CONSOLE_OAUTH_COOKIE = 'ark_console_oauth';

const callbackPath = (provider: string) => `/api/v1/auth/oauth/${provider}/callback`;

/** The console's session cookie as a Set-Cookie value (for a route outside the console's cookie plugin). */
export function consoleSessionCookie(token: string, expiresAt: string, secure: boolean): string {
  const expires = new Date(expiresAt);
  return [
    `${SESSION_COOKIE}=${token}`,
    'Path=/console',
    ...(Number.isNaN(expires.getTime()) ? [] : [`Expires=${expires.toUTCString()}`]),
    'HttpOnly',
    'SameSite=Strict',
    ...(secure ? ['Secure'] : []),
  ].join('; ');
}

/** Lax, like the binding cookie: the provider's redirect back is a cross-site top-level navigation that must carry it. */
export function consoleOAuthCookie(provider: string, maxAgeS: number, secure: boolean): string {
  return [
    `${CONSOLE_OAUTH_COOKIE}=1`,
    `Path=${callbackPath(provider)}`,
    `Max-Age=${maxAgeS}`,
    'HttpOnly',
    'SameSite=Lax',
    ...(secure ? ['Secure'] : []),
  ].join('; ');
}

export const clearConsoleOAuthCookie = (provider: string): string =>
  `${CONSOLE_OAUTH_COOKIE}=; Path=${callbackPath(provider)}; Max-Age=0; HttpOnly; SameSite=Lax`;
