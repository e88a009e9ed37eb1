import { describe, expect, it } from 'vitest';
import { accountView } from './accounts.js';

describe('account views', () => {
  it('builds the self view with exactly the contract fields', () => {
    const view = accountView(
      {
        id: 'a',
        email: 'a@example.test',
        name: null,
        role: 'host',
        accountKind: 'human',
        hostEnabled: true,
        emailVerified: true,
        totpEnabled: false,
        hasPassword: true,
        createdAt: '2026-01-01T00:00:00.000Z',
      },
      'api-key',
    );
    expect(Object.keys(view).sort()).toEqual(
      [
        'account_id',
        'account_kind',
        'auth_method',
        'created_at',
        'email',
        'email_verified',
        'host_enabled',
        'name',
        'role',
        'step_up_method',
        'two_factor_enabled',
      ].sort(),
    );
    expect(view.auth_method).toBe('api-key');
    expect(view.step_up_method).toBe('password');
  });
});
