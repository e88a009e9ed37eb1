import { describe, expect, it } from 'vitest';
import { burnPasswordCheck, generatePassword, hashPassword, passwordPolicyViolation, verifyPassword } from './password.js';

describe('password hashing', () => {
  it('stores a self-describing scrypt string with a random salt', async () => {
    const a = await hashPassword('correct horse battery');
    const b = await hashPassword('correct horse battery');
    expect(a).toMatch(/^scrypt\$N=32768,r=8,p=1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    expect(a).not.toBe(b);
    expect(a).not.toContain('correct horse');
  });

  it('verifies the right password and refuses a wrong one', async () => {
    const stored = await hashPassword('correct horse battery');
    expect(await verifyPassword('correct horse battery', stored)).toBe(true);
    expect(await verifyPassword('correct horse batterY', stored)).toBe(false);
    expect(await verifyPassword('', stored)).toBe(false);
  });

  it('treats canonically equivalent Unicode spellings as the same password', async () => {
    const stored = await hashPassword('caf\u00e9-password-1');
    expect(await verifyPassword('cafe\u0301-password-1', stored)).toBe(true);
  });

  it('never matches a malformed or absurdly expensive stored hash', async () => {
    expect(await verifyPassword('x', 'plain')).toBe(false);
    expect(await verifyPassword('x', 'scrypt$N=1073741824,r=8,p=1$AAAA$AAAAAAAAAAAAAAAAAAAAAA')).toBe(false);
    expect(await verifyPassword('x', 'scrypt$N=32768,r=8,p=1$AAAA$AAAA')).toBe(false);
  });

  it('burns the same work for unknown accounts and always answers false', async () => {
    expect(await burnPasswordCheck('anything at all')).toBe(false);
  });

  it('enforces 12..256 characters', () => {
    expect(passwordPolicyViolation('a'.repeat(11))).toMatch(/at least 12/);
    expect(passwordPolicyViolation('a'.repeat(12))).toBeNull();
    expect(passwordPolicyViolation('a'.repeat(256))).toBeNull();
    expect(passwordPolicyViolation('a'.repeat(257))).toMatch(/at most 256/);
  });

  it('generates strong passwords that pass the policy', () => {
    const a = generatePassword();
    expect(a).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(passwordPolicyViolation(a)).toBeNull();
    expect(generatePassword()).not.toBe(a);
  });
});
