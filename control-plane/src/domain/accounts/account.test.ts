import { describe, expect, it } from 'vitest';
import { decideStepUp, decodeScopes, encodeScopes, normalizeEmail, parseScopeList, stepUpMethodOf } from './account.js';

describe('account rules', () => {
  it('normalizes emails to one spelling', () => {
    expect(normalizeEmail('  Alice@Example.COM ')).toBe('alice@example.com');
  });

  it('asks for TOTP when enrolled, else the password, else nothing', () => {
    expect(stepUpMethodOf({ totpEnabled: true, hasPassword: true })).toBe('totp');
    expect(stepUpMethodOf({ totpEnabled: false, hasPassword: true })).toBe('password');
    expect(stepUpMethodOf({ totpEnabled: false, hasPassword: false })).toBe('none');
  });

  it('refuses a password step-up once TOTP is enabled, and a TOTP step-up before', () => {
    expect(decideStepUp({ totpEnabled: true, hasPassword: true }, { password: 'x' })).toEqual({ refused: 'STEP_UP_TOTP_REQUIRED' });
    expect(decideStepUp({ totpEnabled: true, hasPassword: true }, { totp_code: '123456' })).toEqual({ method: 'totp', code: '123456' });
    expect(decideStepUp({ totpEnabled: false, hasPassword: true }, { totp_code: '123456' })).toEqual({ refused: 'TOTP_NOT_ENROLLED' });
    expect(decideStepUp({ totpEnabled: false, hasPassword: true }, { password: 'x' })).toEqual({ method: 'password', password: 'x' });
    expect(decideStepUp({ totpEnabled: false, hasPassword: false }, { password: 'x' })).toEqual({ refused: 'STEP_UP_FAILED' });
  });

  it('stores scopes as a canonical list and parses operator input strictly', () => {
    expect(encodeScopes(['renter', 'host'])).toBe('host,renter');
    expect(decodeScopes('host,renter')).toEqual(['host', 'renter']);
    expect(decodeScopes('renter')).toEqual(['renter']);
    expect(parseScopeList('renter, host,renter')).toEqual(['renter', 'host']);
    expect(parseScopeList('renter,admin')).toBeNull();
    expect(parseScopeList('')).toBeNull();
  });
});
