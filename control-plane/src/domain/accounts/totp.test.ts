import { describe, expect, it } from 'vitest';
import { Secret, TOTP, URI } from 'otpauth';
import { newTotpSecret, totpCodeAt, totpUri, verifyTotp } from './totp.js';

describe('TOTP', () => {
  const secret = newTotpSecret();
  const now = new Date('2026-03-01T12:00:10.000Z');
  const step = BigInt(Math.floor(now.getTime() / 30_000));

  it('makes a 160-bit base32 seed and a URI authenticator apps read', () => {
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    const parsed = URI.parse(totpUri(secret, 'a@example.test'));
    expect(parsed).toBeInstanceOf(TOTP);
    expect(parsed.issuer).toBe('Ark');
    expect(parsed.label).toBe('a@example.test');
    expect(parsed.secret.base32).toBe(secret);
  });

  it('accepts the current code and its neighbours, answering their time step', () => {
    const code = TOTP.generate({ secret: Secret.fromBase32(secret), timestamp: now.getTime() });
    expect(totpCodeAt(secret, now)).toBe(code);
    expect(verifyTotp(secret, code, now, null)).toBe(step);
    expect(verifyTotp(secret, totpCodeAt(secret, new Date(now.getTime() - 30_000)), now, null)).toBe(step - 1n);
    expect(verifyTotp(secret, totpCodeAt(secret, new Date(now.getTime() + 30_000)), now, null)).toBe(step + 1n);
    expect(verifyTotp(secret, totpCodeAt(secret, new Date(now.getTime() - 90_000)), now, null)).toBeNull();
  });

  it('refuses a code from a step already used (no replay)', () => {
    const code = totpCodeAt(secret, now);
    expect(verifyTotp(secret, code, now, step)).toBeNull();
    expect(verifyTotp(secret, code, now, step - 1n)).toBe(step);
  });

  it('refuses a wrong code', () => {
    const code = totpCodeAt(secret, now);
    const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, '0');
    expect(verifyTotp(secret, wrong, now, null)).toBeNull();
  });
});
