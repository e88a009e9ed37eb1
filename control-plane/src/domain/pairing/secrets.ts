import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

// Poll secrets and enrollment tokens: 32 random bytes behind a prefix that says what they are. Only their
// sha256 is stored; the random part carries 256 bits, so no salt or KDF is needed.

export const POLL_SECRET_PREFIX = 'arkpoll_';
export const ENROLLMENT_TOKEN_PREFIX = 'arkenr_';

export const newPollSecret = (): string => `${POLL_SECRET_PREFIX}${randomBytes(32).toString('base64url')}`;
export const newEnrollmentToken = (): string => `${ENROLLMENT_TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;

export const hashSecret = (secret: string): string => createHash('sha256').update(secret).digest('hex');

/** A new poll secret, handed to the installer once, and the hash the store keeps of it. */
export function mintPollSecret(): { pollSecret: string; pollSecretHash: string } {
  const pollSecret = newPollSecret();
  return { pollSecret, pollSecretHash: hashSecret(pollSecret) };
}

/** A new enrollment token, handed out once, and the hash the store keeps of it. */
export function mintEnrollmentToken(): { token: string; tokenHash: string } {
  const token = newEnrollmentToken();
  return { token, tokenHash: hashSecret(token) };
}

/** Constant-time comparison of a presented secret with a stored hash. */
export function secretMatches(presented: string, storedHash: string): boolean {
  const a = Buffer.from(hashSecret(presented), 'hex');
  const b = Buffer.from(storedHash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}
