import { describe, expect, it } from 'vitest';
import { decideProviderSignIn } from './oauth.js';

const verified = { email: 'Ada@Example.test', emailVerified: true };

describe('what a provider sign-in does to accounts', () => {
  it('a linked identity signs in to its account, whatever account has its email now', () => {
    expect(decideProviderSignIn(verified, 'acc-1', { id: 'acc-2', emailVerified: true }, 'ada@example.test')).toEqual({
      kind: 'signed-in',
      accountId: 'acc-1',
    });
  });

  it('a verified email links to the verified account that has it, or creates one', () => {
    expect(decideProviderSignIn(verified, null, { id: 'acc-2', emailVerified: true }, 'ada@example.test')).toEqual({
      kind: 'link',
      accountId: 'acc-2',
    });
    expect(decideProviderSignIn(verified, null, null, 'ada@example.test')).toEqual({ kind: 'create', email: 'ada@example.test' });
  });

  it('refuses an email the provider did not verify (or none), and an account that never verified the same email', () => {
    expect(decideProviderSignIn({ ...verified, emailVerified: false }, null, null, 'ada@example.test')).toEqual({
      refused: 'OAUTH_EMAIL_UNVERIFIED',
    });
    expect(decideProviderSignIn({ email: null, emailVerified: true }, null, null, null)).toEqual({ refused: 'OAUTH_EMAIL_UNVERIFIED' });
    expect(decideProviderSignIn({ ...verified, emailVerified: false }, 'acc-1', null, 'ada@example.test')).toEqual({
      refused: 'OAUTH_EMAIL_UNVERIFIED',
    });
    expect(decideProviderSignIn(verified, null, { id: 'acc-2', emailVerified: false }, 'ada@example.test')).toEqual({
      refused: 'OAUTH_ACCOUNT_UNVERIFIED',
    });
  });
});
