import { Secret, TOTP } from 'otpauth';

// RFC 6238 defaults every authenticator app understands: SHA1, 6 digits, 30 s.
const PERIOD_S = 30;
const ISSUER = 'Ark';

export function newTotpSecret(): string {
  return new Secret({ size: 20 }).base32;
}

function totp(secretBase32: string, label: string): TOTP {
  return new TOTP({ issuer: ISSUER, label, algorithm: 'SHA1', digits: 6, period: PERIOD_S, secret: Secret.fromBase32(secretBase32) });
}

export function totpUri(secretBase32: string, email: string): string {
  return totp(secretBase32, email).toString();
}

/**
 * Accepts a code from the current period or one either side (clock drift). Answers the time step the code
 * belongs to, or null. A step at or before `lastUsedStep` is refused, so a code observed once cannot be replayed.
 */
export function verifyTotp(secretBase32: string, code: string, now: Date, lastUsedStep: bigint | null): bigint | null {
  const timestamp = now.getTime();
  const delta = totp(secretBase32, ISSUER).validate({ token: code, timestamp, window: 1 });
  if (delta === null) return null;
  const step = BigInt(TOTP.counter({ period: PERIOD_S, timestamp }) + delta);
  if (lastUsedStep !== null && step <= lastUsedStep) return null;
  return step;
}

/** The code an authenticator app shows at `at` (tests and the seed helper use it). */
export function totpCodeAt(secretBase32: string, at: Date): string {
  return totp(secretBase32, ISSUER).generate({ timestamp: at.getTime() });
}
