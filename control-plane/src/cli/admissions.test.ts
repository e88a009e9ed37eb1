import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerAccounts } from '../domain/ledger/accounts.js';
import { insertAccount } from '../store/accounts.js';
import { runTransfer } from '../store/ledger.js';
import { createTestStore, DIALECTS, type TestStore } from '../testing/stores.js';
import { admissionCommands, setAdmissionsCommand } from './admissions.js';
import { CliRefusal } from './context.js';
import { type TestCliContext, testCliContext } from './testing.js';

const now = new Date('2026-04-03T08:00:00.000Z');
const DAY_MS = 86_400_000;

const command = (name: string) => {
  const found = admissionCommands.find((c) => c.name === name);
  if (!found) throw new Error(`no command ${name}`);
  return found;
};

describe.each(DIALECTS)('ark-cp admissions and ledger summary on %s', (dialect) => {
  let store: TestStore;
  let cli: TestCliContext;
  const emails = { admin: `admin-${randomUUID()}@example.test`, renter: `renter-${randomUUID()}@example.test` };
  const ids = { admin: '', renter: '', host: '' };

  beforeAll(async () => {
    store = await createTestStore(dialect);
    cli = testCliContext(store, now);
    const seed = async (email: string, role: 'admin' | 'renter' | 'host') =>
      (await insertAccount(store.db, { email, passwordHash: null, name: null, role, emailVerified: true, now })).id;
    ids.admin = await seed(emails.admin, 'admin');
    ids.renter = await seed(emails.renter, 'renter');
    ids.host = await seed(`host-${randomUUID()}@example.test`, 'host');
  });
  afterAll(async () => {
    await cli.close();
    await store.destroy();
  });

  const printed = () => JSON.parse(cli.stdout.at(-1) ?? 'null');

  it('pauses and resumes as a named admin, audited; anyone else is refused', async () => {
    await expect(setAdmissionsCommand(cli, { enabled: false, email: emails.renter, reason: 'no' })).rejects.toThrow(CliRefusal);
    await expect(setAdmissionsCommand(cli, { enabled: false, email: emails.admin, reason: '   ' })).rejects.toThrow(CliRefusal);
    expect(await command('admissions pause').run({ email: emails.admin, reason: 'incident 9' }, cli)).toBe(0);
    expect(printed()).toEqual({
      enabled: false,
      reason: 'incident 9',
      changed_by: ids.admin,
      changed_at: now.toISOString(),
      held_deposits: 0,
    });
    expect(await command('admissions status').run({}, cli)).toBe(0);
    expect(printed().enabled).toBe(false);
    expect(await command('admissions resume').run({ email: emails.admin, reason: 'incident 9 closed' }, cli)).toBe(0);
    expect(printed()).toMatchObject({ enabled: true, reason: 'incident 9 closed' });
    const audit = await store.db.selectFrom('audit_log').select(['action', 'actor_account_id']).where('subject', '=', 'platform').execute();
    expect(audit).toEqual(
      expect.arrayContaining([
        { action: 'admin.admissions.paused', actor_account_id: ids.admin },
        { action: 'admin.admissions.resumed', actor_account_id: ids.admin },
      ]),
    );
  });

  it("ledger summary: the platform's books per kind of account and per UTC day, balanced", async () => {
    const jobId = randomUUID();
    const yesterday = new Date(now.getTime() - DAY_MS);
    const move = (from: ReturnType<typeof ledgerAccounts.fees>, to: typeof from, amountMicro: bigint, kind: any, at: Date) =>
      runTransfer(store, { from, to, amountMicro, kind, reference: jobId, at });
    const available = ledgerAccounts.available(ids.renter);
    const hold = ledgerAccounts.hold(jobId, ids.renter);
    const payable = ledgerAccounts.payable(ids.host);
    await move(ledgerAccounts.external('chain:8453'), available, 9_000_000n, 'deposit', yesterday);
    // An operator's credit (`ark-cp ledger credit`) is money in too.
    await move(ledgerAccounts.adjustment(), available, 500_000n, 'adjustment', yesterday);
    await move(available, hold, 4_000_000n, 'reservation', yesterday);
    await move(hold, payable, 1_800_000n, 'charge_host', now);
    await move(hold, ledgerAccounts.fees(), 200_000n, 'charge_fee', now);
    await move(payable, ledgerAccounts.external('chain:8453'), 1_000_000n, 'payout', now);

    expect(await command('ledger summary').run({ from: '2026-04-02', to: '2026-04-03' }, cli)).toBe(0);
    expect(printed()).toEqual({
      as_of: now.toISOString(),
      from: '2026-04-02',
      to: '2026-04-03',
      totals: {
        available_micro: '5500000',
        held_micro: '2000000',
        pending_micro: '0',
        payable_micro: '800000',
        locked_micro: '0',
        fees_micro: '200000',
        money_in_micro: '9500000',
        money_out_micro: '1000000',
      },
      balanced: true,
      days: [
        { day: '2026-04-02', fees_earned_micro: '0', money_in_micro: '9500000', money_out_micro: '0', postings: 3 },
        { day: '2026-04-03', fees_earned_micro: '200000', money_in_micro: '0', money_out_micro: '1000000', postings: 3 },
      ],
    });
    // The default window ends today and spans 30 days; a day outside it is left out, a bad day refused.
    await command('ledger summary').run({ from: '2026-04-03' }, cli);
    expect(printed().days.map((d: { day: string }) => d.day)).toEqual(['2026-04-03']);
    await expect(command('ledger summary').run({ from: '2026-02-30' }, cli)).rejects.toThrow('not a calendar day');
    await expect(command('ledger summary').run({ from: '2025-01-01', to: '2026-04-03' }, cli)).rejects.toThrow('366 days');
    await expect(command('ledger summary').run({ from: '04/01/2026' }, cli)).rejects.toThrow(CliRefusal);
  });
});
