// Account life cycle over real HTTP and real SMTP, on each store: sign up, read the verification mail from an
// in-process SMTP server, verify, sign in, enable TOTP, step up with TOTP, create an API key and use it.
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { ManualClock } from '@ark/control-plane/clock';
import { smtpMailer } from '@ark/control-plane/mail';
import { createTestApp, type TestApp } from '@ark/control-plane/testing/app';
import { DIALECTS } from '@ark/control-plane/testing/stores';
import { Secret, TOTP } from 'otpauth';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

interface ReceivedMail {
  to: string[];
  raw: string;
}

/** Undoes quoted-printable (soft line breaks and =XX escapes), which nodemailer uses for long text lines. */
function decodeQuotedPrintable(text: string): string {
  const joined = text.replace(/=\r?\n/g, '');
  return Buffer.from(
    joined.replace(/=([0-9A-F]{2})/g, (_m, hex: string) => String.fromCharCode(Number.parseInt(hex, 16))),
    'latin1',
  ).toString('utf8');
}

function mailBody(raw: string): string {
  const split = raw.indexOf('\r\n\r\n');
  const headers = raw.slice(0, split);
  const body = raw.slice(split + 4);
  return /content-transfer-encoding:\s*quoted-printable/i.test(headers) ? decodeQuotedPrintable(body) : body;
}

async function startSmtp(): Promise<{ server: SMTPServer; port: number; inbox: ReceivedMail[] }> {
  const inbox: ReceivedMail[] = [];
  const server = new SMTPServer({
    // Plain SMTP on loopback: no STARTTLS offered, no authentication asked.
    disabledCommands: ['STARTTLS', 'AUTH'],
    authOptional: true,
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        inbox.push({ to: session.envelope.rcptTo.map((r) => r.address), raw: Buffer.concat(chunks).toString('utf8') });
        callback();
      });
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.server.address() as AddressInfo).port;
  return { server, port, inbox };
}

async function waitFor<T>(probe: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe.each(DIALECTS)('account flow over HTTP and SMTP on %s', (dialect) => {
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  let t: TestApp<ManualClock>;
  let baseUrl: string;

  beforeAll(async () => {
    smtp = await startSmtp();
    const smtpUrl = `smtp://127.0.0.1:${smtp.port}?ignoreTLS=true`;
    const from = 'Ark <no-reply@ark.invalid>';
    // A manual clock drives the server so the test can move to the next TOTP period instead of waiting 30 s.
    t = await createTestApp(dialect, {
      clock: new ManualClock(new Date()),
      mailer: smtpMailer(smtpUrl, from),
      configOverrides: { publicBaseUrl: 'https://ark.example.test', smtp: { url: smtpUrl, from } },
    });
    baseUrl = await t.app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(async () => {
    await t?.destroy();
    await new Promise<void>((resolve) => (smtp ? smtp.server.close(() => resolve()) : resolve()));
  });

  async function call(method: string, path: string, options: { token?: string; body?: unknown; headers?: Record<string, string> } = {}) {
    const headers: Record<string, string> = { ...options.headers };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, text, json: text ? (JSON.parse(text) as Record<string, any>) : null };
  }

  it('signs up, verifies by mail, signs in, enables TOTP, steps up and creates a working API key', async () => {
    const email = `e2e-${randomUUID()}@example.test`;
    const password = 'a sufficiently long password';

    const signUp = await call('POST', '/api/v1/accounts', { body: { email, password, name: 'End To End' } });
    expect(signUp.status, signUp.text).toBe(201);
    expect(signUp.headers.get('cache-control')).toBe('private, no-store');
    expect(signUp.json).toEqual({ account_id: expect.any(String), email, email_verified: false });

    const mail = await waitFor(() => smtp.inbox.find((m) => m.to.includes(email)));
    expect(mail.raw).toMatch(/^Subject: Confirm your email address for Ark/m);
    const text = mailBody(mail.raw);
    const link = /https:\/\/ark\.example\.test\/verify-email\?token=([A-Za-z0-9_-]+)/.exec(text);
    expect(link, text).not.toBeNull();
    const token = link![1]!;

    // Sign-in works before verification; the account says it is not verified yet.
    const early = await call('POST', '/api/v1/auth/sessions', { body: { email, password } });
    expect(early.status).toBe(201);
    expect((await call('GET', '/api/v1/account', { token: early.json!.session_token })).json!.email_verified).toBe(false);

    const verify = await call('POST', '/api/v1/account/email-verification', { body: { token } });
    expect(verify.status, verify.text).toBe(200);
    expect(verify.json).toEqual({ account_id: signUp.json!.account_id, email, email_verified: true });
    expect((await call('POST', '/api/v1/account/email-verification', { body: { token } })).json!.error.code).toBe(
      'VERIFICATION_TOKEN_INVALID',
    );

    const wrong = await call('POST', '/api/v1/auth/sessions', { body: { email, password: 'not the password at all' } });
    expect(wrong.status).toBe(401);
    expect(wrong.json!.error.code).toBe('INVALID_CREDENTIALS');
    expect(wrong.json!.error.request_id).toBe(wrong.headers.get('x-request-id'));

    const signIn = await call('POST', '/api/v1/auth/sessions', { body: { email, password } });
    expect(signIn.status).toBe(201);
    const session = signIn.json!.session_token as string;
    expect(session).toMatch(/^ars_/);

    const me = await call('GET', '/api/v1/account', { token: session });
    expect(me.json).toMatchObject({
      email,
      email_verified: true,
      two_factor_enabled: false,
      auth_method: 'session',
      step_up_method: 'password',
      role: 'renter',
    });

    // Enrolling TOTP is itself a sensitive change: it needs a recent password step-up.
    expect((await call('POST', '/api/v1/account/totp', { token: session })).json!.error.code).toBe('STEP_UP_REQUIRED');
    const passwordStepUp = await call('POST', '/api/v1/account/step-up', { token: session, body: { password } });
    expect(passwordStepUp.status, passwordStepUp.text).toBe(200);
    expect(passwordStepUp.json!.method).toBe('password');

    const enroll = await call('POST', '/api/v1/account/totp', { token: session });
    expect(enroll.status, enroll.text).toBe(200);
    const totp = new TOTP({ secret: Secret.fromBase32(enroll.json!.secret), algorithm: 'SHA1', digits: 6, period: 30 });
    expect(enroll.json!.otpauth_uri).toContain(`secret=${enroll.json!.secret}`);
    const confirm = await call('POST', '/api/v1/account/totp/confirm', {
      token: session,
      body: { totp_code: totp.generate({ timestamp: t.clock.now().getTime() }) },
    });
    expect(confirm.status, confirm.text).toBe(200);

    const withTotp = await call('GET', '/api/v1/account', { token: session });
    expect(withTotp.json).toMatchObject({ two_factor_enabled: true, step_up_method: 'totp' });
    expect((await call('POST', '/api/v1/account/step-up', { token: session, body: { password } })).json!.error.code).toBe(
      'STEP_UP_TOTP_REQUIRED',
    );

    await t.clock.advance(30_000);
    const totpStepUp = await call('POST', '/api/v1/account/step-up', {
      token: session,
      body: { totp_code: totp.generate({ timestamp: t.clock.now().getTime() }) },
    });
    expect(totpStepUp.status, totpStepUp.text).toBe(200);
    expect(totpStepUp.json).toEqual({
      method: 'totp',
      expires_at: new Date(t.clock.now().getTime() + t.ctx.config.stepUpTtlMs).toISOString(),
    });

    const idempotencyKey = randomUUID();
    const keyBody = { label: 'e2e key', scopes: ['renter', 'host'] };
    const created = await call('POST', '/api/v1/account/api-keys', {
      token: session,
      body: keyBody,
      headers: { 'idempotency-key': idempotencyKey },
    });
    expect(created.status, created.text).toBe(201);
    expect(created.json!.secret).toMatch(/^ark_[A-Za-z0-9_-]{43}$/);

    const byKey = await call('GET', '/api/v1/account', { token: created.json!.secret });
    expect(byKey.status).toBe(200);
    expect(byKey.json).toMatchObject({
      account_id: signUp.json!.account_id,
      auth_method: 'api-key',
      two_factor_enabled: true,
      step_up_method: 'totp',
    });

    const replay = await call('POST', '/api/v1/account/api-keys', {
      token: session,
      body: keyBody,
      headers: { 'idempotency-key': idempotencyKey },
    });
    expect(replay.status).toBe(201);
    expect(replay.text).toBe(created.text);

    const conflict = await call('POST', '/api/v1/account/api-keys', {
      token: session,
      body: { label: 'another key', scopes: ['renter'] },
      headers: { 'idempotency-key': idempotencyKey },
    });
    expect(conflict.status).toBe(409);
    expect(conflict.json!.error.code).toBe('IDEMPOTENCY_CONFLICT');

    const keys = await call('GET', '/api/v1/account/api-keys', { token: session });
    expect(keys.json!.items).toHaveLength(1);
    expect(keys.json!.items[0]).toMatchObject({ api_key_id: created.json!.api_key_id, last_used_at: expect.any(String) });

    const signOut = await call('DELETE', '/api/v1/auth/sessions/current', { token: session });
    expect(signOut.status).toBe(204);
    expect((await call('GET', '/api/v1/account', { token: session })).status).toBe(401);
    expect((await call('GET', '/api/v1/account', { token: created.json!.secret })).status).toBe(200);
  });
});
