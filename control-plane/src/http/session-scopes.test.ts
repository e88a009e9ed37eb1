import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../clock.js';
import { bearer, createTestApp, seedAccount, type TestApp } from '../testing/app.js';
import { DIALECTS } from '../testing/stores.js';

// A session carries the scopes of what its account does (issue 22): renter always, host once the account hosts (or
// signed up as a host, or is an admin). A session may still turn hosting on: the enrollment-token and pairing-approval
// routes take any session.

describe.each(DIALECTS)('session scopes on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  beforeAll(async () => {
    t = await createTestApp(dialect);
  });
  afterAll(async () => {
    await t.destroy();
  });

  const market = (token: string) => t.app.inject({ method: 'GET', url: '/api/v1/hosts/market?window=7d', headers: bearer(token) });
  const post = (token: string, url: string, payload?: object) =>
    t.app.inject({ method: 'POST', url, headers: { ...bearer(token), 'idempotency-key': randomUUID() }, ...(payload ? { payload } : {}) });

  it('keeps host market statistics from a renter who never hosted, and opens them once its hosting is on', async () => {
    const renter = await seedAccount(t.ctx, { role: 'renter' });
    const refused = await market(renter.sessionToken);
    expect(refused.statusCode, refused.body).toBe(403);
    expect(refused.json().error).toMatchObject({ code: 'SCOPE_REQUIRED', message: 'This operation needs the host scope.' });
    // Renting is untouched.
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/billing/balance', headers: bearer(renter.sessionToken) })).statusCode).toBe(
      200,
    );
    // The session may start hosting all the same: a pairing code is looked at (none here), an enrollment token issued.
    expect((await post(renter.sessionToken, '/api/v1/hosts/pairings/approve', { user_code: 'ZZZZ-ZZZZ' })).statusCode).toBe(404);
    const token = await post(renter.sessionToken, '/api/v1/hosts/enrollment-tokens');
    expect(token.statusCode, token.body).toBe(201);
    const account = await t.app.inject({ method: 'GET', url: '/api/v1/account', headers: bearer(renter.sessionToken) });
    expect(account.json()).toMatchObject({ role: 'renter', host_enabled: true });
    const opened = await market(renter.sessionToken);
    expect(opened.statusCode, opened.body).toBe(200);
  });

  it('gives a host-role and an admin session the host scope from the start', async () => {
    const host = await seedAccount(t.ctx, { role: 'host' });
    expect((await market(host.sessionToken)).statusCode).toBe(200);
    const admin = await seedAccount(t.ctx, { role: 'admin', withTotp: true });
    expect((await market(admin.sessionToken)).statusCode).toBe(200);
  });

  it('still asks an API key for the host scope to start hosting', async () => {
    const renter = await seedAccount(t.ctx, { role: 'renter', scopes: ['renter'] });
    const refused = await post(renter.apiKey, '/api/v1/hosts/enrollment-tokens');
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.code).toBe('SCOPE_REQUIRED');
  });
});
