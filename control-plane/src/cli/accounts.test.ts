import { dirname } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type ManualClock, systemClock } from '../clock.js';
import { verifyPassword } from '../domain/accounts/password.js';
import { bearer, createTestApp, seedAccount, type TestApp, testConfig } from '../testing/app.js';
import { DIALECTS } from '../testing/stores.js';
import { runCli } from './index.js';

describe.each(DIALECTS)('operator CLI for accounts and keys on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  let run: (...argv: string[]) => Promise<{ code: number; stdout: string; stderr: string }>;

  beforeAll(async () => {
    t = await createTestApp(dialect);
    // The CLI opens the same store the app serves, as an operator's shell would.
    const config =
      dialect === 'postgres'
        ? testConfig({ databaseUrl: t.store.location, secretKey: t.ctx.config.secretKey })
        : testConfig({ databaseUrl: null, dataDir: dirname(t.store.location), secretKey: t.ctx.config.secretKey });
    const logger = pino({ level: 'silent' });
    run = async (...argv) => {
      let stdout = '';
      let stderr = '';
      const out = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
        stdout += String(chunk);
        return true;
      });
      const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
        stderr += String(chunk);
        return true;
      });
      try {
        const code = await runCli(argv, { config, logger, clock: systemClock, serve: async () => 0 });
        return { code, stdout, stderr };
      } finally {
        out.mockRestore();
        err.mockRestore();
      }
    };
  });
  afterAll(async () => {
    await t.destroy();
  });

  it('answers --help on every command with its usage, exit 0, and runs nothing', async () => {
    for (const argv of [
      ['accounts', 'create', '--help'],
      ['ledger', 'credit', '-h'],
      ['serve', '--help'],
      ['templates', 'import', '--help'],
    ]) {
      const help = await run(...argv);
      expect(help, argv.join(' ')).toMatchObject({ code: 0, stderr: '' });
      expect(help.stdout, argv.join(' ')).toMatch(new RegExp(`^usage: ark-cp ${argv[0]}`));
    }
  });

  it('creates an admin with a generated password, printed once, who can then sign in and read the audit log', async () => {
    const { code, stdout, stderr } = await run('accounts', 'create', '--email', 'Ops@Example.test', '--role', 'admin', '--verified');
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const printed = JSON.parse(stdout);
    expect(printed).toEqual({
      account_id: expect.any(String),
      email: 'ops@example.test',
      role: 'admin',
      name: null,
      email_verified: true,
      created_at: expect.any(String),
      initial_password: expect.stringMatching(/^[A-Za-z0-9_-]{32}$/),
    });
    const row = await t.store.db.selectFrom('accounts').selectAll().where('id', '=', printed.account_id).executeTakeFirstOrThrow();
    expect(await verifyPassword(printed.initial_password, row.password_hash!)).toBe(true);

    const session = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/sessions',
      payload: { email: 'ops@example.test', password: printed.initial_password },
    });
    expect(session.statusCode).toBe(201);
    const audit = await t.app.inject({ method: 'GET', url: '/api/v1/admin/audit', headers: bearer(session.json().session_token) });
    expect(audit.statusCode).toBe(200);
    expect(audit.json().items.map((e: { action: string }) => e.action)).toContain('account.created_by_operator');
  });

  it('creates an account with a given password, unverified unless asked', async () => {
    const { code, stdout } = await run(
      'accounts',
      'create',
      '--email',
      'host@example.test',
      '--role',
      'host',
      '--password',
      'operator chosen pw',
    );
    expect(code).toBe(0);
    const printed = JSON.parse(stdout);
    expect(printed.email_verified).toBe(false);
    expect(printed.role).toBe('host');
    expect(printed).not.toHaveProperty('initial_password');
    const session = await t.app.inject({
      method: 'POST',
      url: '/api/v1/auth/sessions',
      payload: { email: 'host@example.test', password: 'operator chosen pw' },
    });
    expect(session.statusCode).toBe(201);
  });

  it('refuses a bad role, a duplicate email, a short password and missing options with exit code 1', async () => {
    const badRole = await run('accounts', 'create', '--email', 'x@example.test', '--role', 'root');
    expect(badRole.code).toBe(1);
    expect(badRole.stderr).toContain('--role must be one of renter, host, admin');
    expect(badRole.stdout).toBe('');
    const duplicate = await run('accounts', 'create', '--email', 'HOST@example.test', '--role', 'renter');
    expect(duplicate.code).toBe(1);
    expect(duplicate.stderr).toContain('already exists');
    const short = await run('accounts', 'create', '--email', 'y@example.test', '--role', 'renter', '--password', 'short');
    expect(short.code).toBe(1);
    expect(short.stderr).toContain('at least 12');
    const noEmail = await run('accounts', 'create', '--role', 'renter');
    expect(noEmail.code).toBe(1);
    expect(noEmail.stderr).toContain('--email is required');
    const badEmail = await run('accounts', 'create', '--email', 'nope', '--role', 'renter');
    expect(badEmail.code).toBe(1);
    expect(badEmail.stderr).toContain('not an email address');
  });

  it('creates an API key whose secret authenticates, printed once', async () => {
    const { code, stdout, stderr } = await run(
      'keys',
      'create',
      '--email',
      'host@example.test',
      '--scopes',
      'host',
      '--label',
      'rig 1',
      '--expires-at',
      '2099-01-01T00:00:00Z',
    );
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const printed = JSON.parse(stdout);
    expect(printed).toMatchObject({
      api_key_id: expect.any(String),
      secret: expect.stringMatching(/^ark_[A-Za-z0-9_-]{43}$/),
      scopes: ['host'],
      label: 'rig 1',
    });
    expect(printed.expires_at).toBe('2099-01-01T00:00:00.000Z');
    const self = await t.app.inject({ method: 'GET', url: '/api/v1/account', headers: bearer(printed.secret) });
    expect(self.statusCode).toBe(200);
    expect(self.json()).toMatchObject({ email: 'host@example.test', auth_method: 'api-key' });
    const row = await t.store.db.selectFrom('api_keys').selectAll().where('id', '=', printed.api_key_id).executeTakeFirstOrThrow();
    expect(row.secret_hash).not.toBe(printed.secret);
  });

  it('refuses an unknown email, bad scopes and a bad expiry with exit code 1', async () => {
    const unknown = await run('keys', 'create', '--email', 'ghost@example.test', '--scopes', 'renter', '--label', 'x');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no account with email "ghost@example.test"');
    const scopes = await run('keys', 'create', '--email', 'host@example.test', '--scopes', 'renter,admin', '--label', 'x');
    expect(scopes.code).toBe(1);
    expect(scopes.stderr).toContain('--scopes must be a comma list of renter and host');
    const past = await run(
      'keys',
      'create',
      '--email',
      'host@example.test',
      '--scopes',
      'renter',
      '--label',
      'x',
      '--expires-at',
      '2001-01-01T00:00:00Z',
    );
    expect(past.code).toBe(1);
    expect(past.stderr).toContain('in the future');
    const garbage = await run(
      'keys',
      'create',
      '--email',
      'host@example.test',
      '--scopes',
      'renter',
      '--label',
      'x',
      '--expires-at',
      'tomorrow',
    );
    expect(garbage.code).toBe(1);
    expect(garbage.stderr).toContain('RFC 3339');
  });

  it('shows, sets and clears an account’s spend-rate cap, audited with the operator’s reason; the API sees the same cap', async () => {
    const account = await seedAccount(t.ctx, { email: 'capped@example.test' });
    const show = await run('accounts', 'spend-cap', '--email', 'capped@example.test');
    expect(show.code, show.stderr).toBe(0);
    const before = JSON.parse(show.stdout);
    expect(before).toMatchObject({ account_id: account.accountId, is_default: true, committed_micro_per_hour: '0' });

    const noReason = await run('accounts', 'spend-cap', '--email', 'capped@example.test', '--per-hour-micro', '5000000');
    expect(noReason.code).toBe(1);
    expect(noReason.stderr).toContain('--reason');
    const bad = await run(
      'accounts',
      'spend-cap',
      '--email',
      'capped@example.test',
      '--per-hour-micro',
      '5.5',
      '--reason',
      'abuse report 7',
    );
    expect(bad.code, bad.stderr).toBe(1);
    expect(bad.stderr).toContain('--per-hour-micro');
    const both = await run(
      'accounts',
      'spend-cap',
      '--email',
      'capped@example.test',
      '--per-hour-micro',
      '1',
      '--default',
      '--reason',
      'abuse report 7',
    );
    expect(both.code).toBe(1);

    const set = await run(
      'accounts',
      'spend-cap',
      '--email',
      'capped@example.test',
      '--per-hour-micro',
      '5000000',
      '--reason',
      'abuse report 7',
    );
    expect(set.code, set.stderr).toBe(0);
    expect(JSON.parse(set.stdout)).toMatchObject({ cap_micro_per_hour: '5000000', is_default: false, available_micro_per_hour: '5000000' });
    const seen = await t.app.inject({ method: 'GET', url: '/api/v1/account/spend-cap', headers: bearer(account.apiKey) });
    expect(seen.json()).toMatchObject({ cap_micro_per_hour: '5000000', is_default: false });
    const audit = await t.store.db
      .selectFrom('audit_log')
      .select(['action', 'detail'])
      .where('subject', '=', account.accountId)
      .where('action', '=', 'spend_cap.set_by_operator')
      .execute();
    expect(audit).toHaveLength(1);
    expect(JSON.stringify(audit[0]?.detail)).toContain('abuse report 7');

    const cleared = await run('accounts', 'spend-cap', '--email', 'capped@example.test', '--default', '--reason', 'report closed');
    expect(cleared.code, cleared.stderr).toBe(0);
    expect(JSON.parse(cleared.stdout)).toMatchObject({ is_default: true, cap_micro_per_hour: before.cap_micro_per_hour });
    expect((await run('accounts', 'spend-cap', '--email', 'nobody@example.test')).code).toBe(1);
  });
});
