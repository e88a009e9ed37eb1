import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { systemClock } from '../clock.js';
import { loadConfig } from '../config/index.js';
import { ledgerAccounts } from '../domain/ledger/accounts.js';
import { openConfiguredStore } from '../runtime.js';
import { insertAccount } from '../store/accounts.js';
import type { Store } from '../store/db.js';
import { balanceOf, balancesOfOwner, postingsByReference, runTransfer, verifyLedger } from '../store/ledger.js';
import { createTestStore, DIALECTS, type TestStore } from '../testing/stores.js';
import { CliRefusal } from './context.js';
import { runCli } from './index.js';
import { balanceCommand, creditCommand } from './ledger.js';
import { type TestCliContext, testCliContext } from './testing.js';

const now = new Date('2026-04-01T08:00:00.000Z');

async function seedRenter(store: Store): Promise<{ id: string; email: string }> {
  const email = `renter-${randomUUID()}@example.test`;
  const row = await insertAccount(store.db, { email, passwordHash: null, name: null, role: 'renter', emailVerified: true, now });
  return { id: row.id, email };
}

describe.each(DIALECTS)('ledger credit on %s', (dialect) => {
  let store: TestStore;
  let cli: TestCliContext;
  beforeAll(async () => {
    store = await createTestStore(dialect);
    cli = testCliContext(store, now);
  });
  afterAll(async () => {
    await cli.close();
    await store.destroy();
  });

  it('credits available from adjustment, audited in the same transaction', async () => {
    const renter = await seedRenter(store);
    // The operator may type the email in any case, with stray spaces.
    const out = await creditCommand(cli, {
      email: `  ${renter.email.toUpperCase()} `,
      amountMicro: '5000000',
      reason: 'launch credit',
      operator: 'ops',
    });
    expect(out).toEqual({ account_id: renter.id, posting_id: expect.any(String), available_micro: '5000000' });
    const again = await creditCommand(cli, { email: renter.email, amountMicro: '250', reason: 'goodwill', operator: 'ops' });
    expect(again.available_micro).toBe('5000250');
    expect(await balancesOfOwner(store.db, renter.id)).toEqual({
      availableMicro: 5_000_250n,
      heldMicro: 0n,
      pendingMicro: 0n,
      payableMicro: 0n,
    });
    expect(await balanceOf(store.db, ledgerAccounts.adjustment())).toBe(-5_000_250n);

    const audit = await store.db
      .selectFrom('audit_log')
      .selectAll()
      .where('subject', '=', renter.id)
      .where('action', '=', 'ledger.credited_by_operator')
      .orderBy('detail')
      .execute();
    expect(audit.map((a) => JSON.parse(a.detail))).toEqual(
      expect.arrayContaining([
        { posting_id: out.posting_id, amount_micro: '5000000', reason: 'launch credit', operator: 'ops' },
        { posting_id: again.posting_id, amount_micro: '250', reason: 'goodwill', operator: 'ops' },
      ]),
    );
    expect(audit).toHaveLength(2);
    expect(audit[0]?.at).toBe(now.toISOString());
    const posting = await store.db.selectFrom('ledger_postings').selectAll().where('id', '=', out.posting_id).executeTakeFirstOrThrow();
    expect(posting).toMatchObject({
      kind: 'adjustment',
      amount_micro: 5_000_000n,
      from_key: 'adjustment:platform',
      to_key: `available:${renter.id}`,
    });
    expect(await postingsByReference(store.db, posting.reference)).toHaveLength(1);
    expect((await verifyLedger(store)).ok).toBe(true);
  });

  it('refuses bad input and unknown emails without posting anything', async () => {
    const renter = await seedRenter(store);
    const before = await store.db
      .selectFrom('ledger_postings')
      .select((eb) => eb.fn.countAll<bigint>().as('n'))
      .executeTakeFirstOrThrow();
    const refusals: Array<[Partial<Parameters<typeof creditCommand>[1]>, RegExp]> = [
      [{ email: 'nobody@example.test' }, /no account with email/],
      [{ amountMicro: '0' }, /--amount-micro/],
      [{ amountMicro: '-5' }, /--amount-micro/],
      [{ amountMicro: '1.5' }, /--amount-micro/],
      [{ amountMicro: '007' }, /--amount-micro/],
      [{ amountMicro: '99999999999999999999' }, /--amount-micro/],
      [{ amountMicro: '1000000000000000001' }, /at most/],
      [{ reason: '   ' }, /--reason/],
      [{ reason: 'x'.repeat(501) }, /--reason/],
    ];
    for (const [override, message] of refusals) {
      const attempt = creditCommand(cli, { email: renter.email, amountMicro: '10', reason: 'r', ...override });
      await expect(attempt).rejects.toThrow(CliRefusal);
      await expect(attempt).rejects.toThrow(message);
    }
    const after = await store.db
      .selectFrom('ledger_postings')
      .select((eb) => eb.fn.countAll<bigint>().as('n'))
      .executeTakeFirstOrThrow();
    expect(BigInt(after.n)).toBe(BigInt(before.n));
    expect(await balanceOf(store.db, ledgerAccounts.available(renter.id))).toBe(0n);
  });

  it("shows an account's available, held and payable balances", async () => {
    const renter = await seedRenter(store);
    await creditCommand(cli, { email: renter.email, amountMicro: '700', reason: 'r', operator: 'ops' });
    await runTransfer(store, {
      from: ledgerAccounts.available(renter.id),
      to: ledgerAccounts.payable(renter.id),
      amountMicro: 200n,
      kind: 'adjustment',
      reference: `test-${randomUUID()}`,
      at: now,
    });
    expect(await balanceCommand(cli, { email: ` ${renter.email.toUpperCase()}` })).toEqual({
      account_id: renter.id,
      available_micro: '500',
      held_micro: '0',
      pending_micro: '0',
      payable_micro: '200',
    });
    await expect(balanceCommand(cli, { email: 'nobody@example.test' })).rejects.toThrow(/no account with email/);
  });

  it('runs as `ledger credit` and `ledger verify` against the configured store', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'ark-ledger-cli-'));
    const config = loadConfig({
      ARK_DATA_DIR: dataDir,
      ARK_SECRET_KEY: randomBytes(32).toString('hex'),
      DATABASE_URL: dialect === 'postgres' ? store.location : undefined,
    });
    const configured = await openConfiguredStore(config);
    const renter = await seedRenter(configured);
    await configured.close();
    const writes: string[] = [];
    const out = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      writes.push(String(chunk));
      return true;
    });
    const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      writes.push(`stderr:${String(chunk)}`);
      return true;
    });
    try {
      const env = { config, logger: pino({ level: 'silent' }), clock: systemClock, serve: async () => 0 };
      const run = (...argv: string[]) => runCli(argv, env);
      expect(await run('ledger', 'credit', '--email', renter.email, '--amount-micro', '1200', '--reason', 'test')).toBe(0);
      const printed = JSON.parse(writes.join(''));
      expect(printed).toEqual({ account_id: renter.id, posting_id: expect.any(String), available_micro: '1200' });
      writes.length = 0;
      expect(await run('ledger', 'credit', '--email', 'missing@example.test', '--amount-micro', '1', '--reason', 'x')).toBe(1);
      expect(writes.join('')).toMatch(/^stderr:ark-cp ledger credit: no account with email/);
      writes.length = 0;
      expect(await run('ledger', 'credit', '--email', renter.email, '--reason', 'x')).toBe(1);
      expect(writes.join('')).toMatch(/--amount-micro is required/);
      writes.length = 0;
      expect(await run('ledger', 'balance', '--email', renter.email)).toBe(0);
      expect(JSON.parse(writes.join(''))).toEqual({
        account_id: renter.id,
        available_micro: '1200',
        held_micro: '0',
        pending_micro: '0',
        payable_micro: '0',
      });
      writes.length = 0;
      expect(await run('ledger', 'verify')).toBe(0);
      expect(JSON.parse(writes.join(''))).toMatchObject({ ok: true, sum_micro: '0', discrepancies: [] });
    } finally {
      out.mockRestore();
      err.mockRestore();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('ark-cp ledger credit (a real process on SQLite)', () => {
  const root = resolve(import.meta.dirname, '../../..');
  const run = promisify(execFile);
  let dataDir: string;
  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'ark-ledger-bin-'));
  });
  afterAll(() => {
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('prints the credited balance as JSON', async () => {
    const env = { ...process.env, ARK_DATA_DIR: dataDir, DATABASE_URL: '', LOG_LEVEL: 'silent' };
    const config = loadConfig(env);
    const store = await openConfiguredStore(config);
    const renter = await seedRenter(store);
    await store.close();
    // ark-cp as operators run it: the compiled bundle test/harness/global-setup.ts builds before the run.
    const main = join(root, 'control-plane', 'dist', 'main.mjs');
    const { stdout } = await run(
      process.execPath,
      [main, 'ledger', 'credit', '--email', renter.email, '--amount-micro', '42000000', '--reason', 'pilot credit'],
      { env, cwd: root },
    );
    expect(JSON.parse(stdout)).toEqual({ account_id: renter.id, posting_id: expect.any(String), available_micro: '42000000' });
    const verified = await run(process.execPath, [main, 'ledger', 'verify'], { env, cwd: root });
    expect(JSON.parse(verified.stdout)).toEqual({ ok: true, accounts: '2', postings: '1', sum_micro: '0', discrepancies: [] });
  });
});
