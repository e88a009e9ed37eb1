import { createHash, randomUUID } from 'node:crypto';
import { Type } from '@sinclair/typebox';
import type { InjectOptions } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../clock.js';
import { SecretBox, integrationContext } from '../../domain/accounts/secret-box.js';
import { totpCodeAt } from '../../domain/accounts/totp.js';
import { recordStepUp } from '../../store/accounts-credentials.js';
import { bearer, createTestApp, type SeededAccount, seedAccount, seedAgent, type TestApp } from '../../testing/app.js';
import { DIALECTS } from '../../testing/stores.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

type Json = Record<string, any>;

function expectError(res: { statusCode: number; headers: Record<string, unknown>; json(): Json }, status: number, code: string) {
  expect(res.statusCode, JSON.stringify(res.json())).toBe(status);
  const body = res.json();
  expect(Object.keys(body)).toEqual(['error']);
  expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'request_id', 'retryable']);
  expect(body.error.code).toBe(code);
  expect(body.error.request_id).toBe(res.headers['x-request-id']);
  expect(body.error.request_id).toMatch(UUID);
  return body.error as { code: string; message: string; retryable: boolean; request_id: string };
}

const tokenFromMail = (text: string): string => {
  const match = /verify-email\?token=([A-Za-z0-9_-]+)/.exec(text);
  if (!match?.[1]) throw new Error(`no token in mail: ${text}`);
  return match[1];
};

describe.each(DIALECTS)('account routes on %s', (dialect) => {
  let t: TestApp<ManualClock>;

  beforeAll(async () => {
    t = await createTestApp(dialect, {
      configOverrides: { authAttemptsPerMinute: 10_000, publicBaseUrl: 'https://ark.example.test' },
      extraRoutes(app) {
        app.get('/test/renter', { config: { auth: { scope: 'renter' } } }, async () => ({ ok: true }));
        app.get('/test/host', { config: { auth: { scope: 'host' } } }, async () => ({ ok: true }));
        app.post(
          '/test/admin-sensitive',
          { config: { auth: { admin: true, stepUp: 'totp' } }, schema: { response: { 200: Type.Object({ ok: Type.Boolean() }) } } },
          async () => ({
            ok: true,
          }),
        );
      },
    });
  });
  afterAll(async () => {
    await t.destroy();
  });

  const inject = (options: InjectOptions) => t.app.inject(options);
  const post = (url: string, payload: unknown, token?: string, headers: Record<string, string> = {}) =>
    inject({ method: 'POST', url, payload: payload as Json, headers: { ...(token ? bearer(token) : {}), ...headers } });
  const get = (url: string, token?: string) => inject({ method: 'GET', url, headers: token ? bearer(token) : {} });
  const del = (url: string, token?: string) => inject({ method: 'DELETE', url, headers: token ? bearer(token) : {} });
  const idem = () => ({ 'idempotency-key': randomUUID() });

  async function stepUpWithPassword(account: SeededAccount, token: string) {
    const res = await post('/api/v1/account/step-up', { password: account.password }, token);
    expect(res.statusCode, res.body).toBe(200);
  }

  describe('sign-up and email verification', () => {
    it('creates a renter, answers 201 without a session, and mails a verification link', async () => {
      const res = await post('/api/v1/accounts', { email: 'New.User@Example.TEST', password: 'a long enough password', name: 'New User' });
      expect(res.statusCode, res.body).toBe(201);
      expect(res.headers['cache-control']).toBe('private, no-store');
      const body = res.json();
      expect(body).toEqual({ account_id: expect.stringMatching(UUID), email: 'new.user@example.test', email_verified: false });
      const mail = t.outbox.at(-1)!;
      expect(mail.to).toBe('new.user@example.test');
      expect(mail.text).toContain('https://ark.example.test/verify-email?token=');
      const row = await t.store.db.selectFrom('accounts').selectAll().where('id', '=', body.account_id).executeTakeFirstOrThrow();
      expect(row.role).toBe('renter');
      expect(row.password_hash).toMatch(/^scrypt\$/);
      expect(row.name).toBe('New User');
    });

    it('refuses an existing email in any case with 409 EMAIL_TAKEN', async () => {
      await post('/api/v1/accounts', { email: 'taken@example.test', password: 'a long enough password' });
      expectError(await post('/api/v1/accounts', { email: 'TAKEN@example.test', password: 'another long password' }), 409, 'EMAIL_TAKEN');
    });

    it('accepts role host (hosting enabled) and never admin', async () => {
      const res = await post('/api/v1/accounts', { email: 'host-signup@example.test', password: 'a long enough password', role: 'host' });
      expect(res.statusCode).toBe(201);
      const row = await t.store.db.selectFrom('accounts').selectAll().where('id', '=', res.json().account_id).executeTakeFirstOrThrow();
      expect(row.role).toBe('host');
      expect(row.host_enabled).toBe(1n);
      const admin = expectError(
        await post('/api/v1/accounts', { email: 'admin-signup@example.test', password: 'a long enough password', role: 'admin' }),
        422,
        'VALIDATION_FAILED',
      );
      expect(admin.message).toContain('body/role');
    });

    it('enforces the password length and the body shape with 422 naming the field', async () => {
      expect(
        expectError(await post('/api/v1/accounts', { email: 'p1@example.test', password: 'x'.repeat(11) }), 422, 'VALIDATION_FAILED')
          .message,
      ).toContain('body/password');
      expect(
        expectError(await post('/api/v1/accounts', { email: 'p2@example.test', password: 'x'.repeat(257) }), 422, 'VALIDATION_FAILED')
          .message,
      ).toContain('body/password');
      expect((await post('/api/v1/accounts', { email: 'p3@example.test', password: 'x'.repeat(256) })).statusCode).toBe(201);
      expect(
        expectError(await post('/api/v1/accounts', { email: 'not-an-email', password: 'x'.repeat(12) }), 422, 'VALIDATION_FAILED').message,
      ).toContain('body/email');
      expect(
        expectError(
          await post('/api/v1/accounts', { email: 'p4@example.test', password: 'x'.repeat(12), admin: true }),
          422,
          'VALIDATION_FAILED',
        ).message,
      ).toContain('admin');
    });

    it('verifies with the mailed token exactly once', async () => {
      await post('/api/v1/accounts', { email: 'verify-me@example.test', password: 'a long enough password' });
      const token = tokenFromMail(t.outbox.at(-1)!.text);
      const res = await post('/api/v1/account/email-verification', { token });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual({ account_id: expect.stringMatching(UUID), email: 'verify-me@example.test', email_verified: true });
      expectError(await post('/api/v1/account/email-verification', { token }), 422, 'VERIFICATION_TOKEN_INVALID');
      expectError(await post('/api/v1/account/email-verification', { token: 'made-up' }), 422, 'VERIFICATION_TOKEN_INVALID');
      // Only the token's hash is stored.
      const rows = await t.store.db.selectFrom('email_verifications').select('token_hash').execute();
      expect(rows.some((r) => r.token_hash === createHash('sha256').update(token).digest('hex'))).toBe(true);
      expect(rows.some((r) => r.token_hash === token)).toBe(false);
    });

    it('expires the link after 24 hours', async () => {
      await post('/api/v1/accounts', { email: 'slow-reader@example.test', password: 'a long enough password' });
      const token = tokenFromMail(t.outbox.at(-1)!.text);
      await t.clock.advance(24 * 3_600_000);
      expectError(await post('/api/v1/account/email-verification', { token }), 422, 'VERIFICATION_TOKEN_INVALID');
    });

    it('verifies through the link itself, and resends a link to an unverified signed-in account', async () => {
      await post('/api/v1/accounts', { email: 'clicker@example.test', password: 'a long enough password' });
      const signIn = await post('/api/v1/auth/sessions', { email: 'clicker@example.test', password: 'a long enough password' });
      const session = signIn.json().session_token as string;
      const resent = await post('/api/v1/account/email-verification/resend', undefined, session);
      expect(resent.json()).toEqual({ sent: true });
      const token = tokenFromMail(t.outbox.at(-1)!.text);
      const page = await get(`/verify-email?token=${token}`);
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain('verified');
      expect((await get('/api/v1/account', session)).json().email_verified).toBe(true);
      expect((await post('/api/v1/account/email-verification/resend', undefined, session)).json()).toEqual({ sent: false });
      expect((await get(`/verify-email?token=${token}`)).statusCode).toBe(422);
    });
  });

  describe('sessions', () => {
    let account: SeededAccount;
    beforeAll(async () => {
      account = await seedAccount(t.ctx, { email: 'signin@example.test', password: 'the right password' });
    });

    it('signs in with any email case and answers a bearer token that expires', async () => {
      const res = await post('/api/v1/auth/sessions', { email: 'SignIn@Example.test', password: 'the right password' });
      expect(res.statusCode, res.body).toBe(201);
      expect(res.headers['cache-control']).toBe('private, no-store');
      const body = res.json();
      expect(Object.keys(body).sort()).toEqual(['expires_at', 'session_token']);
      expect(body.session_token).toMatch(/^ars_[A-Za-z0-9_-]{43}$/);
      expect(body.expires_at).toBe(new Date(t.clock.now().getTime() + t.ctx.config.sessionTtlMs).toISOString());
      const row = await t.store.db
        .selectFrom('sessions')
        .selectAll()
        .where('token_hash', '=', createHash('sha256').update(body.session_token).digest('hex'))
        .executeTakeFirst();
      expect(row?.account_id).toBe(account.accountId);
      expect((await get('/api/v1/account', body.session_token)).statusCode).toBe(200);
      await t.clock.advance(t.ctx.config.sessionTtlMs);
      expectError(await get('/api/v1/account', body.session_token), 401, 'UNAUTHENTICATED');
    });

    it('answers the same 401 INVALID_CREDENTIALS for a wrong password and an unknown email', async () => {
      const wrong = expectError(
        await post('/api/v1/auth/sessions', { email: 'signin@example.test', password: 'the wrong password' }),
        401,
        'INVALID_CREDENTIALS',
      );
      const unknown = expectError(
        await post('/api/v1/auth/sessions', { email: 'nobody@example.test', password: 'the right password' }),
        401,
        'INVALID_CREDENTIALS',
      );
      expect(unknown.message).toBe(wrong.message);
      expect(unknown.retryable).toBe(false);
    });

    it('signs out the current session only', async () => {
      const other = await seedAccount(t.ctx);
      const second = (await post('/api/v1/auth/sessions', { email: other.email, password: other.password })).json().session_token as string;
      const res = await del('/api/v1/auth/sessions/current', other.sessionToken);
      expect(res.statusCode).toBe(204);
      expect(res.body).toBe('');
      expectError(await get('/api/v1/account', other.sessionToken), 401, 'UNAUTHENTICATED');
      expect((await get('/api/v1/account', second)).statusCode).toBe(200);
      expectError(await del('/api/v1/auth/sessions/current', other.apiKey), 403, 'FORBIDDEN');
      expectError(await del('/api/v1/auth/sessions/current'), 401, 'UNAUTHENTICATED');
    });
  });

  describe('GET /api/v1/account', () => {
    it('answers exactly the contract fields, saying how the request authenticated', async () => {
      const account = await seedAccount(t.ctx, { role: 'host', name: 'Hosty' });
      const bySession = await get('/api/v1/account', account.sessionToken);
      expect(bySession.statusCode).toBe(200);
      expect(bySession.headers['cache-control']).toBe('private, no-store');
      expect(bySession.json()).toEqual({
        account_id: account.accountId,
        email: account.email,
        role: 'host',
        host_enabled: true,
        email_verified: true,
        two_factor_enabled: false,
        auth_method: 'session',
        step_up_method: 'password',
        name: 'Hosty',
        account_kind: 'human',
        created_at: t.clock.now().toISOString(),
      });
      const byKey = await get('/api/v1/account', account.apiKey);
      expect(byKey.json().auth_method).toBe('api-key');
      expect(JSON.stringify(byKey.json())).not.toMatch(/hash|secret|password_/);
    });

    it('is 401 without a credential, with an unknown one, or with a malformed header', async () => {
      expectError(await get('/api/v1/account'), 401, 'UNAUTHENTICATED');
      expectError(await get('/api/v1/account', 'ark_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'), 401, 'UNAUTHENTICATED');
      expectError(await get('/api/v1/account', 'ars_nope'), 401, 'UNAUTHENTICATED');
      expectError(await inject({ method: 'GET', url: '/api/v1/account', headers: { authorization: 'Basic abc' } }), 401, 'UNAUTHENTICATED');
    });
  });

  describe('step-up and TOTP', () => {
    it('steps up with the password, recorded on the credential that asked, with the configured expiry', async () => {
      const account = await seedAccount(t.ctx);
      const res = await post('/api/v1/account/step-up', { password: account.password }, account.sessionToken);
      expect(res.statusCode, res.body).toBe(200);
      const expiresAt = new Date(t.clock.now().getTime() + t.ctx.config.stepUpTtlMs).toISOString();
      expect(res.json()).toEqual({ method: 'password', expires_at: expiresAt });
      const session = await t.store.db.selectFrom('sessions').selectAll().where('id', '=', account.sessionId).executeTakeFirstOrThrow();
      expect(session.step_up_method).toBe('password');
      expect(session.step_up_until).toBe(expiresAt);
      // The API key of the same account is not stepped up by the session's proof.
      const key = await t.store.db.selectFrom('api_keys').selectAll().where('id', '=', account.apiKeyId).executeTakeFirstOrThrow();
      expect(key.step_up_until).toBeNull();
      expectError(
        await post('/api/v1/account/api-keys', { label: 'k', scopes: ['renter'] }, account.apiKey, idem()),
        403,
        'STEP_UP_REQUIRED',
      );
      expect((await post('/api/v1/account/api-keys', { label: 'k', scopes: ['renter'] }, account.sessionToken, idem())).statusCode).toBe(
        201,
      );
      // It lapses.
      await t.clock.advance(t.ctx.config.stepUpTtlMs);
      expectError(
        await post('/api/v1/account/api-keys', { label: 'k', scopes: ['renter'] }, account.sessionToken, idem()),
        403,
        'STEP_UP_REQUIRED',
      );
    });

    it('never steps a person’s API key up with the password (issue 22: a key never escalates with what a person types)', async () => {
      const account = await seedAccount(t.ctx);
      expectError(
        await post('/api/v1/account/api-keys', { label: 'k', scopes: ['renter'] }, account.apiKey, idem()),
        403,
        'STEP_UP_REQUIRED',
      );
      expectError(await post('/api/v1/account/step-up', { password: account.password }, account.apiKey), 403, 'FORBIDDEN');
      const key = await t.store.db.selectFrom('api_keys').selectAll().where('id', '=', account.apiKeyId).executeTakeFirstOrThrow();
      expect(key.step_up_until).toBeNull();
      expectError(
        await post('/api/v1/account/api-keys', { label: 'k', scopes: ['renter'] }, account.apiKey, idem()),
        403,
        'STEP_UP_REQUIRED',
      );
    });

    it('lets a key create keys only within its own scopes (no escalation); a session may create any', async () => {
      // A key with a step-up that counts: an agent's, stepped up by its sign-in wallet.
      const agent = await seedAgent(t.ctx);
      const agentKey = agent.apiKeys[0]!;
      expectError(
        await post('/api/v1/account/api-keys', { label: 'wider', scopes: ['renter', 'host'] }, agentKey, idem()),
        403,
        'SCOPE_REQUIRED',
      );
      expectError(await post('/api/v1/account/api-keys', { label: 'other', scopes: ['host'] }, agentKey, idem()), 403, 'SCOPE_REQUIRED');
      expect((await post('/api/v1/account/api-keys', { label: 'same', scopes: ['renter'] }, agentKey, idem())).statusCode).toBe(201);
      const account = await seedAccount(t.ctx, { scopes: ['renter'] });
      await stepUpWithPassword(account, account.sessionToken);
      expect(
        (await post('/api/v1/account/api-keys', { label: 'by session', scopes: ['renter', 'host'] }, account.sessionToken, idem()))
          .statusCode,
      ).toBe(201);
    });

    it('refuses a wrong password, a TOTP code before enrollment, and a malformed proof', async () => {
      const account = await seedAccount(t.ctx);
      expectError(await post('/api/v1/account/step-up', { password: 'not the password' }, account.sessionToken), 401, 'STEP_UP_FAILED');
      expectError(await post('/api/v1/account/step-up', { totp_code: '123456' }, account.sessionToken), 409, 'TOTP_NOT_ENROLLED');
      expectError(await post('/api/v1/account/step-up', {}, account.sessionToken), 422, 'VALIDATION_FAILED');
      expectError(
        await post('/api/v1/account/step-up', { password: account.password, totp_code: '123456' }, account.sessionToken),
        422,
        'VALIDATION_FAILED',
      );
      expectError(await post('/api/v1/account/step-up', { totp_code: '12345' }, account.sessionToken), 422, 'VALIDATION_FAILED');
      expectError(await post('/api/v1/account/step-up', { password: account.password }), 401, 'UNAUTHENTICATED');
    });

    it('enrolls TOTP behind a step-up, then demands TOTP (and refuses replayed codes)', async () => {
      const account = await seedAccount(t.ctx);
      expectError(await post('/api/v1/account/totp', undefined, account.sessionToken), 403, 'STEP_UP_REQUIRED');
      expectError(await post('/api/v1/account/totp/confirm', { totp_code: '123456' }, account.sessionToken), 409, 'TOTP_NOT_ENROLLED');
      await stepUpWithPassword(account, account.sessionToken);
      expectError(await post('/api/v1/account/totp', undefined, account.apiKey), 403, 'FORBIDDEN');

      const enroll = await post('/api/v1/account/totp', undefined, account.sessionToken);
      expect(enroll.statusCode, enroll.body).toBe(200);
      const { otpauth_uri, secret } = enroll.json();
      expect(secret).toMatch(/^[A-Z2-7]{32}$/);
      expect(otpauth_uri).toMatch(/^otpauth:\/\/totp\/Ark:/);
      expect(otpauth_uri).toContain(`secret=${secret}`);
      const stored = await t.store.db.selectFrom('accounts').selectAll().where('id', '=', account.accountId).executeTakeFirstOrThrow();
      expect(stored.totp_pending_sealed).not.toContain(secret);
      expect((await get('/api/v1/account', account.sessionToken)).json().two_factor_enabled).toBe(false);

      const now = t.clock.now();
      const code = totpCodeAt(secret, now);
      const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, '0');
      expectError(await post('/api/v1/account/totp/confirm', { totp_code: wrong }, account.sessionToken), 422, 'TOTP_CODE_INVALID');
      const confirm = await post('/api/v1/account/totp/confirm', { totp_code: code }, account.sessionToken);
      expect(confirm.statusCode, confirm.body).toBe(200);
      expect(confirm.json()).toEqual({ two_factor_enabled: true });
      const view = (await get('/api/v1/account', account.sessionToken)).json();
      expect(view.two_factor_enabled).toBe(true);
      expect(view.step_up_method).toBe('totp');
      expectError(await post('/api/v1/account/totp', undefined, account.sessionToken), 409, 'TOTP_ALREADY_ENABLED');

      expectError(
        await post('/api/v1/account/step-up', { password: account.password }, account.sessionToken),
        403,
        'STEP_UP_TOTP_REQUIRED',
      );
      // The confirming code's time step is spent.
      expectError(await post('/api/v1/account/step-up', { totp_code: code }, account.sessionToken), 401, 'STEP_UP_FAILED');
      await t.clock.advance(30_000);
      const next = totpCodeAt(secret, t.clock.now());
      const stepUp = await post('/api/v1/account/step-up', { totp_code: next }, account.sessionToken);
      expect(stepUp.statusCode, stepUp.body).toBe(200);
      expect(stepUp.json().method).toBe('totp');
      expectError(await post('/api/v1/account/step-up', { totp_code: next }, account.sessionToken), 401, 'STEP_UP_FAILED');
      // A TOTP code steps up sessions only.
      await t.clock.advance(30_000);
      expectError(
        await post('/api/v1/account/step-up', { totp_code: totpCodeAt(secret, t.clock.now()) }, account.apiKey),
        403,
        'FORBIDDEN',
      );
    });
  });

  describe('API keys', () => {
    let account: SeededAccount;
    beforeAll(async () => {
      account = await seedAccount(t.ctx, { stepUp: true });
    });
    // Tests below move the clock; keep the session's step-up fresh.
    beforeEach(async () => {
      await recordStepUp(t.store.db, { kind: 'session', id: account.sessionId }, 'password', new Date(t.clock.now().getTime() + 60_000));
    });
    const create = (body: unknown, headers: Record<string, string> = idem(), token = account.sessionToken) =>
      post('/api/v1/account/api-keys', body, token, headers);

    it('creates a key whose secret is shown once and stored only as a hash', async () => {
      const res = await create({ label: 'ci runner', scopes: ['renter'] });
      expect(res.statusCode, res.body).toBe(201);
      expect(res.headers['cache-control']).toBe('private, no-store');
      const body = res.json();
      expect(body).toEqual({
        api_key_id: expect.stringMatching(UUID),
        label: 'ci runner',
        scopes: ['renter'],
        prefix: body.secret.slice(0, 12),
        created_at: t.clock.now().toISOString(),
        expires_at: null,
        last_used_at: null,
        secret: expect.stringMatching(/^ark_[A-Za-z0-9_-]{43}$/),
      });
      const row = await t.store.db.selectFrom('api_keys').selectAll().where('id', '=', body.api_key_id).executeTakeFirstOrThrow();
      expect(row.secret_hash).toBe(createHash('sha256').update(body.secret).digest('hex'));
      expect(Object.values(row).some((v) => typeof v === 'string' && v.includes(body.secret))).toBe(false);
      const self = await get('/api/v1/account', body.secret);
      expect(self.json().auth_method).toBe('api-key');
      expectError(await get('/test/host', body.secret), 403, 'SCOPE_REQUIRED');
      expect((await get('/test/renter', body.secret)).statusCode).toBe(200);
    });

    it('replays the identical body for the same key and body, and 409s a different body', async () => {
      const headers = idem();
      const first = await create({ label: 'replayed', scopes: ['host', 'renter'] }, headers);
      expect(first.statusCode).toBe(201);
      // Same body in another key order is the same request.
      const again = await create({ scopes: ['host', 'renter'], label: 'replayed' }, headers);
      expect(again.statusCode).toBe(201);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.json()).toEqual(first.json());
      const conflict = expectError(await create({ label: 'different', scopes: ['host'] }, headers), 409, 'IDEMPOTENCY_CONFLICT');
      expect(conflict.retryable).toBe(false);
      const rows = await t.store.db.selectFrom('api_keys').select('id').where('label', '=', 'replayed').execute();
      expect(rows).toHaveLength(1);
    });

    it('requires the Idempotency-Key header', async () => {
      const missing = expectError(await create({ label: 'x', scopes: ['renter'] }, {}), 422, 'VALIDATION_FAILED');
      expect(missing.message).toContain('idempotency-key');
      expectError(await create({ label: 'x', scopes: ['renter'] }, { 'idempotency-key': 'not-a-uuid' }), 422, 'IDEMPOTENCY_KEY_REQUIRED');
    });

    it('validates label, scopes and expiry', async () => {
      expectError(await create({ label: '', scopes: ['renter'] }), 422, 'VALIDATION_FAILED');
      expectError(await create({ label: 'x'.repeat(201), scopes: ['renter'] }), 422, 'VALIDATION_FAILED');
      expectError(await create({ label: 'x', scopes: [] }), 422, 'VALIDATION_FAILED');
      expectError(await create({ label: 'x', scopes: ['renter', 'renter'] }), 422, 'VALIDATION_FAILED');
      expectError(await create({ label: 'x', scopes: ['admin'] }), 422, 'VALIDATION_FAILED');
      expectError(await create({ label: 'x' }), 422, 'VALIDATION_FAILED');
      expectError(await create({ label: 'x', scopes: ['renter'], expires_at: '2030-01-01T00:00:00+01:00' }), 422, 'VALIDATION_FAILED');
      const past = expectError(
        await create({ label: 'x', scopes: ['renter'], expires_at: t.clock.now().toISOString() }),
        422,
        'VALIDATION_FAILED',
      );
      expect(past.message).toContain('expires_at');
    });

    it('honours the expiry and records last use', async () => {
      const expiresAt = new Date(t.clock.now().getTime() + 3_600_000).toISOString();
      const res = await create({ label: 'short-lived', scopes: ['host'], expires_at: expiresAt });
      expect(res.json().expires_at).toBe(expiresAt);
      const secret = res.json().secret as string;
      expect((await get('/api/v1/account', secret)).statusCode).toBe(200);
      const row = await t.store.db.selectFrom('api_keys').selectAll().where('id', '=', res.json().api_key_id).executeTakeFirstOrThrow();
      expect(row.last_used_at).toBe(t.clock.now().toISOString());
      await t.clock.advance(3_600_000);
      expectError(await get('/api/v1/account', secret), 401, 'UNAUTHENTICATED');
    });

    it('lists keys without secrets, newest first, page by page', async () => {
      const owner = await seedAccount(t.ctx, { stepUp: true });
      await t.clock.advance(1);
      const ids: string[] = [];
      for (const label of ['one', 'two', 'three']) {
        ids.push((await create({ label, scopes: ['renter'] }, idem(), owner.sessionToken)).json().api_key_id);
        await t.clock.advance(1);
      }
      const first = await inject({ method: 'GET', url: '/api/v1/account/api-keys?limit=2', headers: bearer(owner.sessionToken) });
      expect(first.statusCode).toBe(200);
      const page1 = first.json();
      expect(page1.items.map((k: Json) => k.label)).toEqual(['three', 'two']);
      expect(page1.items.every((k: Json) => !('secret' in k))).toBe(true);
      expect(page1.next_cursor).toEqual(expect.any(String));
      const page2 = (
        await get(`/api/v1/account/api-keys?limit=2&cursor=${encodeURIComponent(page1.next_cursor)}`, owner.sessionToken)
      ).json();
      expect(page2.items.map((k: Json) => k.label)).toEqual(['one', 'seed']);
      expect(page2.next_cursor).toBeNull();
      expectError(await get('/api/v1/account/api-keys?cursor=forged.cursor', owner.sessionToken), 422, 'INVALID_CURSOR');
      // Another account's cursor is refused, not followed.
      expectError(
        await get(`/api/v1/account/api-keys?cursor=${encodeURIComponent(page1.next_cursor)}`, account.sessionToken),
        422,
        'INVALID_CURSOR',
      );
      // Another account sees none of them.
      const others = (await get('/api/v1/account/api-keys?limit=100', account.sessionToken)).json();
      expect(others.items.some((k: Json) => ids.includes(k.api_key_id))).toBe(false);
    });

    it('revokes a key (then 401), and answers 404 for someone else’s key', async () => {
      const created = (await create({ label: 'to revoke', scopes: ['renter'] })).json();
      const stranger = await seedAccount(t.ctx);
      expectError(await del(`/api/v1/account/api-keys/${created.api_key_id}`, stranger.sessionToken), 404, 'NOT_FOUND');
      expect((await get('/api/v1/account', created.secret)).statusCode).toBe(200);
      const res = await del(`/api/v1/account/api-keys/${created.api_key_id}`, account.sessionToken);
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ revoked: true });
      expectError(await get('/api/v1/account', created.secret), 401, 'UNAUTHENTICATED');
      const list = (await get('/api/v1/account/api-keys?limit=100', account.sessionToken)).json();
      expect(list.items.some((k: Json) => k.api_key_id === created.api_key_id)).toBe(false);
      expectError(await del(`/api/v1/account/api-keys/${randomUUID()}`, account.sessionToken), 404, 'NOT_FOUND');
      expectError(await del('/api/v1/account/api-keys/not-a-uuid', account.sessionToken), 422, 'VALIDATION_FAILED');
    });

    it('enforces scopes: a host-only key on a renter route is 403 SCOPE_REQUIRED; sessions carry both', async () => {
      const host = await seedAccount(t.ctx, { role: 'host', scopes: ['host'] });
      expectError(await get('/test/renter', host.apiKey), 403, 'SCOPE_REQUIRED');
      expect((await get('/test/host', host.apiKey)).statusCode).toBe(200);
      expect((await get('/test/renter', host.sessionToken)).statusCode).toBe(200);
    });
  });

  describe('administration', () => {
    it('serves the audit log to an admin session only; API keys never authorize it', async () => {
      const admin = await seedAccount(t.ctx, { role: 'admin' });
      const renter = await seedAccount(t.ctx);
      const res = await get('/api/v1/admin/audit?limit=5', admin.sessionToken);
      expect(res.statusCode, res.body).toBe(200);
      const page = res.json();
      expect(page.items.length).toBe(5);
      expect(page.items[0]).toEqual({
        id: expect.any(String),
        at: expect.any(String),
        actor_account_id: expect.anything(),
        action: expect.any(String),
        subject: expect.anything(),
        detail: expect.any(Object),
      });
      expect(page.next_cursor).toEqual(expect.any(String));
      const next = (await get(`/api/v1/admin/audit?limit=5&cursor=${encodeURIComponent(page.next_cursor)}`, admin.sessionToken)).json();
      expect(next.items[0].at <= page.items[4].at).toBe(true);
      expect(next.items.map((e: Json) => e.id)).not.toContain(page.items[4].id);
      expectError(await get('/api/v1/admin/audit', admin.apiKey), 403, 'ADMIN_SESSION_REQUIRED');
      expectError(await get('/api/v1/admin/audit', renter.sessionToken), 403, 'ADMIN_SESSION_REQUIRED');
      expectError(await get('/api/v1/admin/audit'), 401, 'UNAUTHENTICATED');
    });

    it('needs a fresh TOTP step-up for sensitive admin writes; a password step-up does not do', async () => {
      const admin = await seedAccount(t.ctx, { role: 'admin', withTotp: true });
      const plain = await seedAccount(t.ctx, { role: 'admin', stepUp: true });
      expectError(await post('/test/admin-sensitive', {}, admin.sessionToken), 403, 'STEP_UP_REQUIRED');
      expectError(await post('/test/admin-sensitive', {}, plain.sessionToken), 403, 'STEP_UP_REQUIRED');
      const stepUp = await post('/api/v1/account/step-up', { totp_code: totpCodeAt(admin.totpSecret!, t.clock.now()) }, admin.sessionToken);
      expect(stepUp.statusCode, stepUp.body).toBe(200);
      expect((await post('/test/admin-sensitive', {}, admin.sessionToken)).json()).toEqual({ ok: true });
      // The same admin's key, even stepped up, never authorizes admin work.
      await post(
        '/api/v1/account/step-up',
        { totp_code: totpCodeAt(admin.totpSecret!, new Date(t.clock.now().getTime() + 30_000)) },
        admin.apiKey,
      );
      expectError(await post('/test/admin-sensitive', {}, admin.apiKey), 403, 'ADMIN_SESSION_REQUIRED');
    });
  });

  describe('integrations and deletion requests', () => {
    it('stores a model-hub token encrypted, answering 201 with no body', async () => {
      const account = await seedAccount(t.ctx);
      const url = '/api/v1/account/integrations/model-hub';
      expectError(await post(url, { token: 'hf_abc' }, account.sessionToken, idem()), 403, 'STEP_UP_REQUIRED');
      await stepUpWithPassword(account, account.sessionToken);
      expectError(
        await post('/api/v1/account/integrations/github', { token: 'x' }, account.sessionToken, idem()),
        422,
        'VALIDATION_FAILED',
      );
      expectError(await post(url, { token: '' }, account.sessionToken, idem()), 422, 'VALIDATION_FAILED');
      expectError(await post(url, { token: 'x'.repeat(4097) }, account.sessionToken, idem()), 422, 'VALIDATION_FAILED');
      expectError(await post(url, { token: 'hf_abc' }, account.sessionToken), 422, 'VALIDATION_FAILED');
      const headers = idem();
      const res = await post(url, { token: 'hf_first_token' }, account.sessionToken, headers);
      expect(res.statusCode, res.body).toBe(201);
      expect(res.body).toBe('');
      const replay = await post(url, { token: 'hf_first_token' }, account.sessionToken, headers);
      expect(replay.statusCode).toBe(201);
      expect(replay.body).toBe('');
      expect((await post(url, { token: 'hf_second_token' }, account.sessionToken, idem())).statusCode).toBe(201);
      const row = await t.store.db
        .selectFrom('account_integrations')
        .selectAll()
        .where('account_id', '=', account.accountId)
        .executeTakeFirstOrThrow();
      expect(row.provider).toBe('model-hub');
      expect(row.token_sealed).not.toContain('hf_second_token');
      expect(new SecretBox(t.ctx.config.secretKey).open(row.token_sealed, integrationContext(account.accountId, 'model-hub'))).toBe(
        'hf_second_token',
      );
    });

    it('persists one pending deletion request behind a recent re-auth', async () => {
      const account = await seedAccount(t.ctx);
      const url = '/api/v1/account/deletion-request';
      expectError(await post(url, undefined, account.sessionToken, idem()), 403, 'STEP_UP_REQUIRED');
      await stepUpWithPassword(account, account.sessionToken);
      expectError(await post(url, undefined, account.sessionToken), 422, 'VALIDATION_FAILED');
      const res = await post(url, undefined, account.sessionToken, idem());
      expect(res.statusCode, res.body).toBe(202);
      expect(res.json()).toEqual({ request_id: expect.stringMatching(UUID), state: 'PENDING', requested_at: t.clock.now().toISOString() });
      const again = await post(url, undefined, account.sessionToken, idem());
      expect(again.json().request_id).toBe(res.json().request_id);
      const rows = await t.store.db
        .selectFrom('account_deletion_requests')
        .selectAll()
        .where('account_id', '=', account.accountId)
        .execute();
      expect(rows).toEqual([
        { id: res.json().request_id, account_id: account.accountId, state: 'PENDING', requested_at: res.json().requested_at },
      ]);
    });
  });

  describe('rate limits', () => {
    let limited: TestApp<ManualClock>;
    beforeAll(async () => {
      limited = await createTestApp(dialect, { configOverrides: { authAttemptsPerMinute: 3 } });
    });
    afterAll(async () => {
      await limited.destroy();
    });
    const attempt = (url: string, payload: Json, remoteAddress = '127.200.0.1', token?: string) =>
      limited.app.inject({ method: 'POST', url, payload, remoteAddress, headers: token ? bearer(token) : {} });

    it('limits sign-in per source address and per email with 429 UNAVAILABLE, retryable, no Retry-After', async () => {
      for (let i = 0; i < 3; i++)
        expect((await attempt('/api/v1/auth/sessions', { email: `a${i}@example.test`, password: 'x' })).statusCode).toBe(401);
      const res = await attempt('/api/v1/auth/sessions', { email: 'a9@example.test', password: 'x' });
      const error = expectError(res, 429, 'UNAVAILABLE');
      expect(error.retryable).toBe(true);
      expect(res.headers['retry-after']).toBeUndefined();
      // Another address, same email: the per-email counter still counts.
      for (let i = 0; i < 3; i++) await attempt('/api/v1/auth/sessions', { email: 'victim@example.test', password: 'x' }, `127.200.1.${i}`);
      expectError(
        await attempt('/api/v1/auth/sessions', { email: 'victim@example.test', password: 'x' }, '127.200.2.1'),
        429,
        'UNAVAILABLE',
      );
      await limited.clock.advance(60_000);
      expect((await attempt('/api/v1/auth/sessions', { email: 'victim@example.test', password: 'x' }, '127.200.2.1')).statusCode).toBe(401);
    });

    it('limits sign-up and step-up too', async () => {
      for (let i = 0; i < 3; i++) {
        expect(
          (await attempt('/api/v1/accounts', { email: `s${i}@example.test`, password: 'a long enough password' }, '127.200.3.1'))
            .statusCode,
        ).toBe(201);
      }
      expectError(
        await attempt('/api/v1/accounts', { email: 's9@example.test', password: 'a long enough password' }, '127.200.3.1'),
        429,
        'UNAVAILABLE',
      );
      const account = await seedAccount(limited.ctx);
      for (let i = 0; i < 3; i++)
        await attempt('/api/v1/account/step-up', { password: 'wrong password!' }, `127.200.4.${i}`, account.sessionToken);
      expectError(
        await attempt('/api/v1/account/step-up', { password: account.password }, '127.200.5.1', account.sessionToken),
        429,
        'UNAVAILABLE',
      );
    });
  });
});
