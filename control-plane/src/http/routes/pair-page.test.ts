import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../testing/app.js';

describe('the pairing verification page', () => {
  let t: TestApp<any>;
  beforeAll(async () => {
    t = await createTestApp('sqlite');
  });
  afterAll(async () => {
    await t.destroy();
  });

  it('is served at the verification_uri a new pairing announces, without a credential', async () => {
    const created = await t.app.inject({ method: 'POST', url: '/api/v1/hosts/pairings', payload: {} });
    expect(created.statusCode, created.body).toBe(201);
    const path = new URL(created.json().verification_uri).pathname;
    const page = await t.app.inject({ method: 'GET', url: `${path}?code=${created.json().user_code}` });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.headers['content-security-policy']).toContain("default-src 'none'");
    expect(page.headers['x-frame-options']).toBe('DENY');
    // The form drives the public API: lookup, then approve with a fresh Idempotency-Key.
    expect(page.body).toContain('/api/v1/hosts/pairings/lookup');
    expect(page.body).toContain('/api/v1/hosts/pairings/approve');
    expect(page.body).toContain("'idempotency-key': crypto.randomUUID()");
  });
});
