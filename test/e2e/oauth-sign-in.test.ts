// Sign-in with GitHub and Google (issue 13 item 4) over the real control plane (`ark-cp serve`) on both stores, with
// a real OpenID provider (oidc-provider) as Google and a GitHub-shaped OAuth server on loopback. A browser without
// JavaScript follows the redirects: start, the provider's authorization and interaction, the callback with its cookie.
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../harness/postgres.js';
import { freePort } from '../harness/processes.js';
import { api, type ControlPlane, controlPlaneCli, repoRoot, startControlPlane } from './host-side-helpers.js';
import {
  Browser,
  closeServer,
  type GithubHandle,
  type OidcProviderHandle,
  type ProviderUser,
  startGithub,
  startOidcProvider,
} from './oauth-helpers.js';
import { PASSWORD } from './payout-helpers.js';
import { controlPlaneBundle } from '../harness/bundles.js';

const uniqueUser = (label: string, verified = true): ProviderUser => {
  const id = String(Math.floor(Math.random() * 1e9) + 1);
  return { subject: id, email: `${label}-${id}@example.test`, emailVerified: verified, name: `${label} ${id}` };
};

describe.each(['sqlite', 'postgres'] as const)('sign-in with GitHub and Google on %s', (store) => {
  let cp: ControlPlane;
  let google: OidcProviderHandle;
  let github: GithubHandle;
  let database: TestDatabase | undefined;
  let callbackOf: { google: string; github: string };

  beforeAll(async () => {
    const [cpPort, googlePort, githubPort] = await Promise.all([freePort(), freePort(), freePort()]);
    const cpBase = `http://127.0.0.1:${cpPort}`;
    callbackOf = { google: `${cpBase}/api/v1/auth/oauth/google/callback`, github: `${cpBase}/api/v1/auth/oauth/github/callback` };
    [google, github] = await Promise.all([startOidcProvider(googlePort, callbackOf.google), startGithub(githubPort, callbackOf.github)]);
    if (store === 'postgres') database = await createTestDatabase();
    cp = await startControlPlane({
      port: cpPort,
      databaseUrl: database?.url ?? null,
      env: {
        ARK_OAUTH_GOOGLE_CLIENT_ID: google.clientId,
        ARK_OAUTH_GOOGLE_CLIENT_SECRET: google.clientSecret,
        ARK_OAUTH_GOOGLE_ISSUER: google.issuer,
        ARK_OAUTH_GITHUB_CLIENT_ID: github.clientId,
        ARK_OAUTH_GITHUB_CLIENT_SECRET: github.clientSecret,
        ARK_OAUTH_GITHUB_AUTHORIZE_URL: `${github.base}/login/oauth/authorize`,
        ARK_OAUTH_GITHUB_TOKEN_URL: `${github.base}/login/oauth/access_token`,
        ARK_OAUTH_GITHUB_API_URL: github.base,
        // Every sign-in of the file from one address: room for all of them.
        ARK_AUTH_ATTEMPTS_PER_MIN: '1000',
      },
    });
  }, 120_000);

  afterAll(async () => {
    await cp?.process.stop('SIGKILL');
    await Promise.all([google && closeServer(google.server), github && closeServer(github.server)]);
    await database?.drop();
  });

  /** Start to the callback URL the provider sends the browser to, not yet called. */
  const toCallback = async (browser: Browser, provider: 'google' | 'github', user: ProviderUser) => {
    (provider === 'google' ? google : github).signInAs(user);
    return browser.followUntil(`${cp.base}/api/v1/auth/oauth/${provider}/start`, callbackOf[provider]);
  };
  const signIn = async (provider: 'google' | 'github', user: ProviderUser, browser = new Browser()) =>
    browser.json(await toCallback(browser, provider, user));

  it('Google: a new verified email creates a human account whose session works; the same identity signs in to it again', async () => {
    const user = uniqueUser('ada');
    const first = await signIn('google', user);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body).toMatchObject({ outcome: 'created', provider: 'google' });
    expect(first.body.session_token).toMatch(/^ars_/);
    const me = await api(cp.base, 'GET', '/api/v1/account', { token: first.body.session_token });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({
      account_id: first.body.account_id,
      email: user.email,
      email_verified: true,
      account_kind: 'human',
      role: 'renter',
      auth_method: 'session',
      name: user.name,
      // No password and no TOTP: the step-up operation has no proof to ask for; a provider sign-in steps up.
      step_up_method: 'none',
    });
    const again = await signIn('google', user);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ outcome: 'signed-in', account_id: first.body.account_id });
    expect(again.body.session_token).not.toBe(first.body.session_token);
    expect((await api(cp.base, 'GET', '/api/v1/account', { token: again.body.session_token })).body.account_id).toBe(first.body.account_id);
  });

  it('GitHub: an existing password account with the same verified email is linked, and keeps its password', async () => {
    const user = uniqueUser('grace');
    const created = JSON.parse(
      await controlPlaneCli(cp, ['accounts', 'create', '--email', user.email, '--role', 'host', '--password', PASSWORD, '--verified']),
    );
    const linked = await signIn('github', user);
    expect(linked.status, JSON.stringify(linked.body)).toBe(200);
    expect(linked.body).toMatchObject({ outcome: 'linked', provider: 'github', account_id: created.account_id });
    // PKCE went to the token endpoint: the verifier whose S256 the authorization carried.
    expect(github.tokenRequests.at(-1)?.code_verifier).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const me = await api(cp.base, 'GET', '/api/v1/account', { token: linked.body.session_token });
    expect(me.body).toMatchObject({ account_id: created.account_id, role: 'host', step_up_method: 'password' });
    const password = await api(cp.base, 'POST', '/api/v1/auth/sessions', { body: { email: user.email, password: PASSWORD } });
    expect(password.status).toBe(201);
    const again = await signIn('github', user);
    expect(again.body).toMatchObject({ outcome: 'signed-in', account_id: created.account_id });
  });

  it('refuses a state that does not match, a callback without the starting browser’s cookie, and a replayed callback', async () => {
    const user = uniqueUser('mallory');
    const browser = new Browser();
    const callback = new URL(await toCallback(browser, 'google', user));
    const tampered = new URL(callback);
    tampered.searchParams.set('state', `${callback.searchParams.get('state')}x`);
    const mismatch = await browser.json(tampered.href);
    expect(mismatch.status).toBe(400);
    expect(mismatch.body.error.code).toBe('OAUTH_STATE_INVALID');
    // The right state from another browser (no binding cookie): refused, and the sign-in is spent.
    const elsewhere = await new Browser().json(callback.href);
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.body.error.code).toBe('OAUTH_STATE_INVALID');
    const replay = await browser.json(callback.href);
    expect(replay.body.error.code).toBe('OAUTH_STATE_INVALID');

    // GitHub the same way; a good callback works once, its replay is refused.
    const gh = new Browser();
    const good = await toCallback(gh, 'github', uniqueUser('ok'));
    const noState = new URL(good);
    noState.searchParams.delete('state');
    expect((await gh.json(noState.href)).body.error.code).toBe('OAUTH_STATE_INVALID');
    expect((await gh.json(good)).status).toBe(200);
    const replayed = await gh.json(good);
    expect(replayed.status).toBe(400);
    expect(replayed.body.error.code).toBe('OAUTH_STATE_INVALID');
  });

  it('refuses a code redeemed with another sign-in’s PKCE verifier, at both providers', async () => {
    for (const provider of ['google', 'github'] as const) {
      const user = uniqueUser(`pkce-${provider}`);
      const browser = new Browser();
      // Two sign-ins: the first's code under the second's state sends the second's verifier with the first's code.
      const first = new URL(await toCallback(browser, provider, user));
      const second = new URL(await toCallback(browser, provider, user));
      const crossed = new URL(second);
      crossed.searchParams.set('code', first.searchParams.get('code') as string);
      const refused = await browser.json(crossed.href);
      expect(refused.status, JSON.stringify(refused.body)).toBe(401);
      expect(refused.body.error.code).toBe('OAUTH_PROVIDER_REFUSED');
      // oidc-provider: invalid_grant (PKCE verification failed); GitHub: bad_verification_code.
      expect(refused.body.error.message).toMatch(provider === 'google' ? /invalid_grant/ : /bad_verification_code/);
      // Nothing was created for that email.
      const probe = await signIn(provider, { ...user, emailVerified: false });
      expect(probe.body.error.code).toBe('OAUTH_EMAIL_UNVERIFIED');
    }
  });

  it('refuses an email the provider did not verify, and an existing account that never verified the same email', async () => {
    for (const provider of ['google', 'github'] as const) {
      const unverified = await signIn(provider, uniqueUser(`unverified-${provider}`, false));
      expect(unverified.status).toBe(403);
      expect(unverified.body.error).toMatchObject({ code: 'OAUTH_EMAIL_UNVERIFIED', retryable: false });
    }
    // Someone signed up with this address and never verified it: the provider's owner must not inherit that account.
    const user = uniqueUser('squatted');
    const signUp = await api(cp.base, 'POST', '/api/v1/accounts', { body: { email: user.email, password: PASSWORD } });
    expect(signUp.status).toBe(201);
    const refused = await signIn('google', user);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('OAUTH_ACCOUNT_UNVERIFIED');
  });

  it('steps up a provider account’s session by a fresh sign-in with its linked identity, and no other', async () => {
    const user = uniqueUser('stepper');
    const session = (await signIn('google', user)).body.session_token as string;
    const createKey = () =>
      api(cp.base, 'POST', '/api/v1/account/api-keys', { token: session, idempotent: true, body: { label: 'k', scopes: ['renter'] } });
    const before = await createKey();
    expect(before.status).toBe(403);
    expect(before.body.error.code).toBe('STEP_UP_REQUIRED');
    // Not linked to GitHub.
    const notLinked = await api(cp.base, 'POST', '/api/v1/account/step-up/oauth/github', { token: session });
    expect(notLinked.status).toBe(403);
    expect(notLinked.body.error.code).toBe('OAUTH_IDENTITY_NOT_LINKED');
    // Another Google person at the provider: refused, no step-up.
    const started = await api(cp.base, 'POST', '/api/v1/account/step-up/oauth/google', { token: session });
    expect(started.status).toBe(200);
    const browser = new Browser();
    google.signInAs(uniqueUser('someone-else'));
    const wrong = await browser.json(await browser.followUntil(started.body.authorization_url, callbackOf.google));
    expect(wrong.status).toBe(403);
    expect(wrong.body.error.code).toBe('OAUTH_IDENTITY_NOT_LINKED');
    expect((await createKey()).status).toBe(403);
    // The linked identity (in a browser not signed in at the provider as someone else): stepped up. The provider is
    // asked to authenticate the person again, and the ID token's auth_time is checked against max_age.
    const again = await api(cp.base, 'POST', '/api/v1/account/step-up/oauth/google', { token: session });
    const asked = new URL(again.body.authorization_url).searchParams;
    expect([asked.get('prompt'), asked.get('max_age'), asked.get('code_challenge_method')]).toEqual(['login', '300', 'S256']);
    google.signInAs(user);
    const fresh = new Browser();
    const done = await fresh.json(await fresh.followUntil(again.body.authorization_url, callbackOf.google));
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body).toMatchObject({ outcome: 'stepped-up', provider: 'google' });
    expect(done.body.session_token).toBeUndefined();
    const after = await createKey();
    expect(after.status, JSON.stringify(after.body)).toBe(201);
  });

  it('signs in to the web console with either provider: the callback sets the console cookie and lands on /console', async () => {
    const login = await new Browser().get(`${cp.base}/console/login`);
    const page = await login.text();
    expect(page).toContain('href="/console/login/github"');
    expect(page).toContain('href="/console/login/google"');
    for (const provider of ['google', 'github'] as const) {
      const user = uniqueUser(`console-${provider}`);
      (provider === 'google' ? google : github).signInAs(user);
      const browser = new Browser();
      const callback = await browser.followUntil(`${cp.base}/console/login/${provider}`, callbackOf[provider]);
      const back = await browser.get(callback);
      await back.body?.cancel();
      expect(back.status).toBe(303);
      expect(back.headers.get('location')).toBe('/console');
      const cookies = back.headers.getSetCookie();
      expect(cookies.find((c) => c.startsWith('ark_console='))).toMatch(/; Path=\/console; Expires=.*; HttpOnly; SameSite=Strict/);
      // The session is a real API session of the provider's account, and the console shows it.
      const token = /^ark_console=([^;]+)/.exec(cookies.find((c) => c.startsWith('ark_console=')) ?? '')?.[1] as string;
      expect((await api(cp.base, 'GET', '/api/v1/account', { token })).body).toMatchObject({ email: user.email, auth_method: 'session' });
      const home = await browser.get(`${cp.base}/console`);
      expect(home.status).toBe(200);
      expect(await home.text()).toContain(user.email);
    }
    // A sign-in started from the API (no console marker) still answers JSON.
    const user = uniqueUser('api-after-console');
    const json = await signIn('google', user);
    expect(json.status).toBe(200);
    expect(json.body.session_token).toMatch(/^ars_/);
  });

  it.runIf(store === 'sqlite')('the admin auth-provider test checks both providers, and says which one is down', async () => {
    const email = `admin-${randomUUID().slice(0, 8)}@example.test`;
    await controlPlaneCli(cp, ['accounts', 'create', '--email', email, '--role', 'admin', '--password', PASSWORD, '--verified']);
    // An interactive admin session is all the subsystem tests ask for.
    const admin = (await api(cp.base, 'POST', '/api/v1/auth/sessions', { body: { email, password: PASSWORD } })).body
      .session_token as string;
    const test = (provider?: string) =>
      api(cp.base, 'POST', '/api/v1/admin/settings/test', {
        token: admin,
        body: { subsystem: 'auth-provider', ...(provider ? { provider } : {}) },
      });
    const both = await test();
    expect(both.status).toBe(200);
    expect(both.body.ok, both.body.detail).toBe(true);
    expect(both.body.detail).toContain(
      `github: GitHub's token endpoint ${github.base}/login/oauth/access_token accepted this server's client`,
    );
    expect(both.body.detail).toMatch(
      new RegExp(`google: the OpenID provider ${google.issuer} answered its discovery document .* and \\d+ signing keys?`),
    );
    await closeServer(github.server);
    const down = await test('github');
    expect(down.body).toEqual({
      ok: false,
      detail: `github: GitHub's token endpoint ${github.base}/login/oauth/access_token could not be reached: ECONNREFUSED`,
    });
    expect((await test('google')).body.ok).toBe(true);
    expect((await test()).body.ok).toBe(false);
    expect(JSON.stringify(both.body)).not.toContain(github.clientSecret);
  });
});

describe('sign-in with an unconfigured provider, and bad configuration', () => {
  let cp: ControlPlane;
  beforeAll(async () => {
    cp = await startControlPlane();
  }, 60_000);
  afterAll(async () => {
    await cp?.process.stop('SIGKILL');
  });

  it('answers 404 OAUTH_PROVIDER_NOT_CONFIGURED naming the variable, for a start, a callback and a step-up', async () => {
    const start = await new Browser().json(`${cp.base}/api/v1/auth/oauth/github/start`);
    expect(start.status).toBe(404);
    expect(start.body.error.code).toBe('OAUTH_PROVIDER_NOT_CONFIGURED');
    expect(start.body.error.message).toContain('ARK_OAUTH_GITHUB_CLIENT_ID');
    const callback = await new Browser().json(`${cp.base}/api/v1/auth/oauth/google/callback?state=s&code=c`);
    expect(callback.body.error.code).toBe('OAUTH_PROVIDER_NOT_CONFIGURED');
    const unknown = await new Browser().json(`${cp.base}/api/v1/auth/oauth/gitlab/start`);
    expect(unknown.status).toBe(422);
  });

  it('exits 2 naming the variable when a client is half configured (every other refusal: config-oauth.test.ts)', () => {
    // A bad value stops the start before anything listens: the command ends on its own.
    const run = spawnSync(process.execPath, [controlPlaneBundle, 'serve'], {
      cwd: repoRoot,
      env: { ...process.env, ...cp.env, PORT: '0', ARK_OAUTH_GITHUB_CLIENT_ID: 'abc' },
      timeout: 60_000,
      encoding: 'utf8',
    });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('ARK_OAUTH_GITHUB_CLIENT_SECRET must be set when ARK_OAUTH_GITHUB_CLIENT_ID is');
  });
});
