import { hash, randomBytes } from 'node:crypto';

// Bearer secrets are 32 random bytes (43 base64url characters) behind a prefix that says what they are.
// Only their sha256 is stored, so a database leak reveals no usable credential.

export const SESSION_PREFIX = 'ars_';
export const API_KEY_PREFIX = 'ark_';
/** How many characters of an API key are kept in clear as its `prefix`, to tell keys apart. */
const API_KEY_DISPLAY_CHARS = 12;

const random43 = (): string => randomBytes(32).toString('base64url');

export const newSessionToken = (): string => `${SESSION_PREFIX}${random43()}`;
export const newApiKeySecret = (): string => `${API_KEY_PREFIX}${random43()}`;
export const newVerificationToken = (): string => random43();

export const apiKeyDisplayPrefix = (secret: string): string => secret.slice(0, API_KEY_DISPLAY_CHARS);

/** A new session: the bearer token, handed out once, and the hash the store keeps of it. */
export function mintSessionToken(): { token: string; tokenHash: string } {
  const token = newSessionToken();
  return { token, tokenHash: hashToken(token) };
}

/** A new API key: the secret, handed out once, the clear prefix that tells keys apart, and the hash the store keeps. */
export function mintApiKey(): { secret: string; prefix: string; secretHash: string } {
  const secret = newApiKeySecret();
  return { secret, prefix: apiKeyDisplayPrefix(secret), secretHash: hashToken(secret) };
}

/** When a session issued at `now` for `ttlMs` expires. */
export const sessionExpiry = (now: Date, ttlMs: number): Date => new Date(now.getTime() + ttlMs);

/**
 * Hex sha256 of a high-entropy token: no salt or KDF needed, and the lookup stays one indexed read. One-shot `hash`
 * costs a third of `createHash` on a short input, and it runs on every authenticated request.
 */
export const hashToken = (token: string): string => hash('sha256', token, 'hex');

export type TokenKind = 'session' | 'api-key';

export function tokenKind(token: string): TokenKind | null {
  if (token.startsWith(SESSION_PREFIX)) return 'session';
  if (token.startsWith(API_KEY_PREFIX)) return 'api-key';
  return null;
}
