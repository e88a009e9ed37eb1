// The `ark` CLI against a really started control plane, on each store: the binary runs as a child process and the
// test reads only its --json output and exit codes. Accounts, keys and credit are made with `ark-cp` (the operator's
// tool); everything the renter does goes through `ark`. Rentals and host commands: cli-rental.test.ts.
import { randomUUID } from 'node:crypto';
import { rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../harness/postgres.js';
import { freePort } from '../harness/processes.js';
import { ark, arkConfigDir, expectExit } from './cli-helpers.js';
import {
  agentSetup,
  type ControlPlane,
  controlPlaneCli,
  hostSession,
  nvidiaSmiFixture,
  pairAgent,
  startControlPlane,
} from './host-side-helpers.js';
import { DIALECTS } from './rental-helpers.js';

const PASSWORD = 'correct horse battery staple';

describe('ark without a control plane', () => {
  it('answers stable exit codes: 2 for usage, 3 without a credential, 6 when the control plane is unreachable', async () => {
    const configDir = arkConfigDir();
    const usage = await ark(['offers', 'search', '--sort', 'nonsense', '--json'], {
      env: { ARK_CONFIG_DIR: configDir, ARK_API_KEY: 'ark_x' },
    });
    expectExit(usage, 2);
    expect(usage.json.error).toMatchObject({ code: 'USAGE', exit_code: 2 });
    expectExit(await ark(['jobs', 'lisst'], { env: { ARK_CONFIG_DIR: configDir } }), 2);

    const missing = await ark(['--json', 'jobs', 'list'], { env: { ARK_CONFIG_DIR: configDir } });
    expectExit(missing, 3);
    expect(missing.json.error).toMatchObject({ code: 'AUTH_MISSING', exit_code: 3 });

    const port = await freePort();
    const unreachable = await ark(['balance', '--json'], {
      env: { ARK_CONFIG_DIR: configDir, ARK_API_KEY: 'ark_x', ARK_URL: `http://127.0.0.1:${port}` },
    });
    expectExit(unreachable, 6);
    expect(unreachable.json.error.code).toBe('UNREACHABLE');

    const help = expectExit(await ark(['--help']), 0);
    for (const command of ['offers', 'jobs', 'ssh', 'sftp', 'chat', 'deposit', 'topup', 'machines', 'telemetry', 'market']) {
      expect(help.stdout).toContain(command);
    }
  });
});

describe.each(DIALECTS)('ark against a control plane on %s', (dialect) => {
  let database: TestDatabase | undefined;
  let cp: ControlPlane;
  const email = `cli-${randomUUID().slice(0, 8)}@example.test`;
  let key = '';
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    if (dialect === 'postgres') database = await createTestDatabase();
    cp = await startControlPlane({ databaseUrl: database?.url ?? null });
    await controlPlaneCli(cp, ['accounts', 'create', '--email', email, '--role', 'renter', '--password', PASSWORD, '--verified']);
    await controlPlaneCli(cp, ['ledger', 'credit', '--email', email, '--amount-micro', '12500000', '--reason', 'cli e2e']);
    env = { ARK_URL: cp.base, ARK_CONFIG_DIR: arkConfigDir() };
  }, 120_000);

  afterAll(async () => {
    await cp?.process.stop('SIGTERM');
    await database?.drop();
  });

  it('login signs in with the password, creates a key and stores it 0600; whoami and logout use the file', async () => {
    const login = expectExit(await ark(['login', '--email', email, '--json'], { env: { ...env, ARK_PASSWORD: PASSWORD } }), 0);
    expect(login.json).toMatchObject({ logged_in: true, email, role: 'renter', url: cp.base });
    const path = join(env.ARK_CONFIG_DIR as string, 'config.json');
    expect(login.json.config_path).toBe(path);
    expect(statSync(path).mode & 0o777).toBe(0o600);

    const whoami = expectExit(await ark(['whoami', '--json'], { env }), 0);
    expect(whoami.json).toMatchObject({ email, role: 'renter', auth_method: 'api-key', key_source: 'file' });

    // The key created by login is listed (never its secret).
    const keys = expectExit(await ark(['keys', 'list', '--json'], { env }), 0);
    expect(keys.json.items.some((k: any) => k.label.startsWith('ark CLI on ') && k.scopes.join() === 'renter')).toBe(true);
    expect(JSON.stringify(keys.json)).not.toMatch(/ark_[A-Za-z0-9_-]{43}/);

    // A wrong password is refused and stores nothing new.
    const refused = await ark(['login', '--email', email, '--json'], { env: { ...env, ARK_PASSWORD: 'wrong password' } });
    expect(refused.code).toBe(3);
    expect(refused.json.error.status).toBe(401);

    const logout = expectExit(await ark(['logout', '--json'], { env }), 0);
    expect(logout.json.logged_out).toBe(true);
    expectExit(await ark(['whoami', '--json'], { env }), 3);

    // login --api-key-stdin checks the key before storing it.
    key = JSON.parse(await controlPlaneCli(cp, ['keys', 'create', '--email', email, '--scopes', 'renter', '--label', 'cli e2e'])).secret;
    const bad = await ark(['login', '--api-key-stdin', '--json'], { env, input: 'ark_notakey\n' });
    expect(bad.code).toBe(3);
    const good = expectExit(await ark(['login', '--api-key-stdin', '--json'], { env, input: `${key}\n` }), 0);
    expect(good.json.email).toBe(email);
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  it('keys create needs a step-up (3 without a proof), then shows the secret once; revoke makes it fail with 3', async () => {
    const noProof = await ark(['keys', 'create', '--label', 'ci', '--json'], { env });
    expectExit(noProof, 3);
    expect(noProof.json.error.code).toBe('STEP_UP_REQUIRED');

    const created = expectExit(
      await ark(['keys', 'create', '--label', 'ci', '--expires-in', '1d', '--password-stdin', '--json'], { env, input: `${PASSWORD}\n` }),
      0,
    );
    expect(created.json.secret).toMatch(/^ark_[A-Za-z0-9_-]{43}$/);
    expect(created.json.scopes).toEqual(['renter']);
    const asNewKey = { ...env, ARK_API_KEY: created.json.secret };
    expect(expectExit(await ark(['whoami', '--json'], { env: asNewKey }), 0).json.key_source).toBe('env');

    expectExit(await ark(['keys', 'revoke', created.json.api_key_id, '--json'], { env }), 0);
    const revoked = await ark(['whoami', '--json'], { env: asNewKey });
    expectExit(revoked, 3);
    expect(revoked.json.error.status).toBe(401);
  });

  it('machines approve pairs a rig: the code `ark-agent pair` prints, approved by the host with ark, enrolls the machine', async () => {
    const hostEmail = `cli-host-${randomUUID().slice(0, 8)}@example.test`;
    const hostToken = await hostSession(cp, hostEmail);
    const hostKey = JSON.parse(
      await controlPlaneCli(cp, ['keys', 'create', '--email', hostEmail, '--scopes', 'host', '--label', 'cli e2e']),
    ).secret as string;
    const hostEnv = { ARK_URL: cp.base, ARK_API_KEY: hostKey, ARK_CONFIG_DIR: arkConfigDir() };
    const setup = agentSetup({ require_docker: false, min_disk_free_bytes: 0 }, { ARK_AGENT_NVIDIA_SMI_FIXTURE: nvidiaSmiFixture });
    try {
      let approved: Record<string, any> = {};
      const { machineId, userCode } = await pairAgent(cp, hostToken, setup, async (code) => {
        approved = expectExit(await ark(['machines', 'approve', code.toLowerCase(), '--json'], { env: hostEnv }), 0).json;
      });
      expect(userCode).toMatch(/^[A-Z]{4}-[A-Z]{4}$/);
      expect(approved).toMatchObject({ approved: true, go_live: true });
      const listed = expectExit(await ark(['machines', 'list', '--json'], { env: hostEnv }), 0);
      expect(listed.json.items.map((m: { machine_id: string }) => m.machine_id)).toEqual([machineId]);
      // A code already used, or never issued, is refused with the API's code and exit 4 or 2.
      const again = await ark(['machines', 'approve', userCode, '--json'], { env: hostEnv });
      expect([2, 4, 5]).toContain(again.code);
      expect(again.json.error.code).toMatch(/PAIRING|NOT_FOUND|VALIDATION/);
    } finally {
      rmSync(dirname(setup.stateDir), { recursive: true, force: true });
    }
  });

  it('balance shows the credit; tickets create, list and show; templates list needs no key; deposit without addresses answers 1', async () => {
    const balance = expectExit(await ark(['balance', '--json'], { env }), 0);
    expect(balance.json).toMatchObject({ available_micro: '12500000', held_micro: '0', currency: 'USDC' });
    const human = expectExit(await ark(['balance'], { env }), 0);
    expect(human.stdout).toContain('12.50 USDC');

    const opened = expectExit(
      await ark(['tickets', 'create', '--category', 'billing', '--text', 'where is my deposit?', '--json'], { env }),
      0,
    );
    expect(opened.json.ticket_id).toMatch(/^[0-9a-f-]{36}$/);
    const listed = expectExit(await ark(['tickets', '--json'], { env }), 0);
    expect(listed.json.items).toEqual([expect.objectContaining({ ticket_id: opened.json.ticket_id, category: 'billing', state: 'open' })]);
    const shown = expectExit(await ark(['tickets', 'show', opened.json.ticket_id, '--json'], { env }), 0);
    expect(JSON.stringify(shown.json)).toContain('where is my deposit?');
    expectExit(await ark(['tickets', 'reply', opened.json.ticket_id, '--text', 'any news?', '--json'], { env }), 0);

    const templates = expectExit(
      await ark(['templates', 'list', '--json'], { env: { ARK_URL: cp.base, ARK_CONFIG_DIR: arkConfigDir() } }),
      0,
    );
    expect(Array.isArray(templates.json.items)).toBe(true);
    // This control plane's catalog is empty: a person is told how it gets filled, not shown an empty table.
    expect(templates.json.items).toEqual([]);
    const emptyCatalog = expectExit(await ark(['templates', 'list'], { env: { ARK_URL: cp.base, ARK_CONFIG_DIR: arkConfigDir() } }), 0);
    expect(emptyCatalog.stdout).toBe('');
    expect(emptyCatalog.stderr).toContain('ark-cp templates import');

    // No deposit addresses configured on this control plane: its 503 is an API error (exit 1) with its code.
    const deposit = await ark(['deposit', '--json'], { env });
    expectExit(deposit, 1);
    expect(deposit.json.error).toMatchObject({ status: 503, retryable: true });

    // A job that is not there: 4.
    const missing = await ark(['jobs', 'show', randomUUID(), '--json'], { env });
    expectExit(missing, 4);
    expect(missing.json.error.code).toBe('NOT_FOUND');
    // No offers on an empty market: an empty list, not an error.
    expect(expectExit(await ark(['offers', 'search', '--json'], { env }), 0).json.items).toEqual([]);
  });
});
