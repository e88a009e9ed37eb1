import { describe, expect, it } from 'vitest';
import { checkHostingRules, type HostingFacts } from './hosting-rules.js';

const now = new Date('2026-01-02T00:00:00.000Z');
const ok: HostingFacts = { emailVerified: true, hasHostScope: true, blocked: false, hostingStartedAt: null, grantsSinceStart: 0 };

describe('hosting rules', () => {
  it('lets a verified host with the scope, unblocked and under the cap, add a machine', () => {
    expect(checkHostingRules(ok, now, 3)).toBeNull();
  });

  it('refuses in order: block, email, scope, cap', () => {
    expect(checkHostingRules({ ...ok, blocked: true, emailVerified: false }, now, 3)).toBe('HOSTING_BLOCKED');
    expect(checkHostingRules({ ...ok, emailVerified: false, hasHostScope: false }, now, 3)).toBe('EMAIL_NOT_VERIFIED');
    expect(checkHostingRules({ ...ok, hasHostScope: false }, now, 3)).toBe('HOSTING_SCOPE_REVOKED');
    expect(checkHostingRules({ ...ok, grantsSinceStart: 3 }, now, 3)).toBe('NEW_HOST_MACHINE_CAP_REACHED');
  });

  it('applies the cap only in the first 24 hours of hosting', () => {
    const started = new Date(now.getTime() - 24 * 3_600_000 + 1);
    expect(checkHostingRules({ ...ok, hostingStartedAt: started, grantsSinceStart: 2 }, now, 3)).toBeNull();
    expect(checkHostingRules({ ...ok, hostingStartedAt: started, grantsSinceStart: 3 }, now, 3)).toBe('NEW_HOST_MACHINE_CAP_REACHED');
    const dayOld = new Date(now.getTime() - 24 * 3_600_000);
    expect(checkHostingRules({ ...ok, hostingStartedAt: dayOld, grantsSinceStart: 50 }, now, 3)).toBeNull();
    expect(checkHostingRules({ ...ok, grantsSinceStart: 0 }, now, 0)).toBe('NEW_HOST_MACHINE_CAP_REACHED');
  });
});
