import { describe, expect, it } from 'vitest';
import { formatUserCode, generateUserCode, normalizeUserCode, USER_CODE_ALPHABET, USER_CODE_LENGTH } from './user-code.js';

describe('user codes (RFC 8628 section 6.1)', () => {
  it('uses an alphabet without vowels or look-alikes', () => {
    expect(USER_CODE_ALPHABET).toBe('BCDFGHJKLMNPQRSTVWXZ');
    for (const c of 'AEIOUY01') expect(USER_CODE_ALPHABET).not.toContain(c);
    expect(new Set(USER_CODE_ALPHABET).size).toBe(USER_CODE_ALPHABET.length);
  });

  it('draws 8 characters from the alphabet, every character reachable', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 500; i++) {
      const code = generateUserCode();
      expect(code).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{8}$/);
      for (const c of code) seen.add(c);
    }
    expect(seen.size).toBe(USER_CODE_ALPHABET.length);
    expect(generateUserCode(() => 0)).toBe('BBBBBBBB');
    expect(generateUserCode(() => 19)).toBe('ZZZZZZZZ');
    expect(USER_CODE_LENGTH).toBe(8);
  });

  it('is shown as XXXX-XXXX', () => {
    expect(formatUserCode('BCDFGHJK')).toBe('BCDF-GHJK');
  });

  it('normalises case, dashes and spaces on lookup', () => {
    expect(normalizeUserCode('BCDF-GHJK')).toBe('BCDFGHJK');
    expect(normalizeUserCode('bcdf-ghjk')).toBe('BCDFGHJK');
    expect(normalizeUserCode('bcdfghjk')).toBe('BCDFGHJK');
    expect(normalizeUserCode(' Bc-Df Gh-jK ')).toBe('BCDFGHJK');
    expect(normalizeUserCode('BCDF--GHJK')).toBe('BCDFGHJK');
  });

  it('refuses anything that cannot be a code', () => {
    for (const input of ['', 'BCDF-GHJ', 'BCDF-GHJKL', 'ABCD-GHJK', 'BCDF-GHJ0', 'BCDF_GHJK', 'BCDF.GHJK'])
      expect(normalizeUserCode(input)).toBeNull();
  });
});
