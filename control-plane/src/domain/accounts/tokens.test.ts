import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { apiKeyDisplayPrefix, hashToken, newApiKeySecret, newSessionToken, newVerificationToken, tokenKind } from './tokens.js';

describe('bearer tokens', () => {
  it('are 32 random bytes in base64url behind their prefix', () => {
    expect(newSessionToken()).toMatch(/^ars_[A-Za-z0-9_-]{43}$/);
    expect(newApiKeySecret()).toMatch(/^ark_[A-Za-z0-9_-]{43}$/);
    expect(newVerificationToken()).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(newApiKeySecret()).not.toBe(newApiKeySecret());
  });

  it('are told apart by prefix', () => {
    expect(tokenKind(newSessionToken())).toBe('session');
    expect(tokenKind(newApiKeySecret())).toBe('api-key');
    expect(tokenKind('abc')).toBeNull();
  });

  it('are stored as hex sha256 and shown by a short prefix', () => {
    const secret = newApiKeySecret();
    expect(hashToken(secret)).toBe(createHash('sha256').update(secret).digest('hex'));
    expect(apiKeyDisplayPrefix(secret)).toBe(secret.slice(0, 12));
  });
});
