import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../testing/app.js';

describe('the paths a person types', () => {
  let t: TestApp<any>;
  beforeAll(async () => {
    t = await createTestApp('sqlite');
  });
  afterAll(async () => {
    await t.destroy();
  });

  it('leads the verification_uri a new pairing announces to the console pairing page, with its code', async () => {
    const created = await t.app.inject({ method: 'POST', url: '/api/v1/hosts/pairings', payload: {} });
    expect(created.statusCode, created.body).toBe(201);
    const { verification_uri, verification_uri_complete, user_code } = created.json();
    const plain = await t.app.inject({ method: 'GET', url: new URL(verification_uri).pathname });
    expect(plain.statusCode).toBe(302);
    expect(plain.headers.location).toBe('/console/pair');
    const complete = new URL(verification_uri_complete ?? `${verification_uri}?code=${user_code}`);
    const withCode = await t.app.inject({ method: 'GET', url: `${complete.pathname}${complete.search}` });
    expect(withCode.statusCode).toBe(302);
    expect(withCode.headers.location).toBe(`/console/pair?code=${encodeURIComponent(user_code)}`);
    // Not signed in: the console asks for it and comes back to the page with the code.
    const console = await t.app.inject({ method: 'GET', url: withCode.headers.location as string });
    expect(console.statusCode).toBe(303);
    expect(console.headers.location).toBe(
      `/console/login?next=${encodeURIComponent(`/console/pair?code=${encodeURIComponent(user_code)}`)}`,
    );
  });

  it('leads / to the console and /favicon.ico to its icon', async () => {
    const root = await t.app.inject({ method: 'GET', url: '/' });
    expect(root.statusCode).toBe(302);
    expect(root.headers.location).toBe('/console');
    const favicon = await t.app.inject({ method: 'GET', url: '/favicon.ico' });
    expect(favicon.headers.location).toBe('/console/assets/favicon.svg');
    const icon = await t.app.inject({ method: 'GET', url: '/console/assets/favicon.svg' });
    expect(icon.statusCode).toBe(200);
    expect(icon.headers['content-type']).toMatch(/^image\/svg\+xml/);
    expect(icon.body).toContain('<svg');
  });
});
