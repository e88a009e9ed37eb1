import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { paymentsConfigFrom } from '../config/payments.js';
import { insertAccount } from '../store/accounts.js';
import { finishDeposit } from '../store/deposits.js';
import { testConfig } from '../testing/app.js';
import { recordSeen, seenUsdcDeposit, writeChainsFile } from '../testing/deposits.js';
import { createTestStore, DIALECTS, type TestStore } from '../testing/stores.js';
import { CliRefusal } from './context.js';
import { depositCommands } from './deposits.js';
import { type TestCliContext, testCliContext } from './testing.js';

const now = new Date('2026-04-03T08:00:00.000Z');
const USDC = 1_000_000n;

const command = (name: string) => {
  const found = depositCommands.find((c) => c.name === name);
  if (!found) throw new Error(`no command ${name}`);
  return found;
};

describe.each(DIALECTS)('ark-cp deposits held, credit and refund on %s', (dialect) => {
  let store: TestStore;
  let cli: TestCliContext;
  const emails = { admin: `admin-${randomUUID()}@example.test`, renter: `renter-${randomUUID()}@example.test` };
  let renter = '';

  beforeAll(async () => {
    store = await createTestStore(dialect);
    const payments = paymentsConfigFrom({ ARK_CHAINS: writeChainsFile(), ARK_BALANCE_CAP_MICRO: String(10n * USDC) }, (m) => new Error(m));
    cli = testCliContext(store, now, testConfig({ payments: { ...testConfig().payments, ...payments } }));
    const seed = async (email: string, role: 'admin' | 'renter') =>
      (await insertAccount(store.db, { email, passwordHash: null, name: null, role, emailVerified: true, now })).id;
    await seed(emails.admin, 'admin');
    renter = await seed(emails.renter, 'renter');
  });
  afterAll(async () => {
    await cli.close();
    await store.destroy();
  });

  const printed = () => JSON.parse(cli.stdout.at(-1) ?? 'null');
  const held = async () => {
    const id = await recordSeen(store, seenUsdcDeposit(renter, 12n * USDC), now);
    await store.db.transaction().execute((trx) =>
      finishDeposit(trx, id, 'SEEN', 'HELD', {
        amountMicro: 12n * USDC,
        reason: 'exceeds_balance_cap',
        price: null,
        postingId: null,
        at: now,
      }),
    );
    return id;
  };

  it('lists held and refundable deposits, credits one by override and refunds another, as a named admin', async () => {
    const [toCredit, toRefund] = [await held(), await held()];
    expect(await command('deposits held').run({}, cli)).toBe(0);
    const listed = printed();
    expect(listed.state).toBe('HELD');
    // Final at the same instant: the id breaks the tie.
    expect(listed.deposits.map((d: any) => d.deposit_id)).toEqual([toCredit, toRefund].sort());
    expect(listed.deposits[0]).toMatchObject({ needs_operator: true, refund_refusal: null, from_address: `0x${'5'.repeat(40)}` });

    const reason = 'customer support case 12';
    expect(await command('deposits credit').run({ id: toCredit, reason, 'admin-email': emails.admin }, cli)).toBe(0);
    expect(printed()).toMatchObject({ deposit_id: toCredit, action: 'credit', state: 'CREDITED', already: false });
    expect(await command('deposits refund').run({ id: toRefund, reason, 'admin-email': emails.admin }, cli)).toBe(0);
    expect(printed()).toMatchObject({ deposit_id: toRefund, action: 'refund', state: 'REFUNDING', refund_to: `0x${'5'.repeat(40)}` });
    // Run again (an operator unsure whether it went through): the same answer, nothing done twice.
    expect(await command('deposits refund').run({ id: toRefund, reason, 'admin-email': emails.admin }, cli)).toBe(0);
    expect(printed()).toMatchObject({ state: 'REFUNDING', already: true });

    expect(await command('deposits held').run({ state: 'REFUNDING' }, cli)).toBe(0);
    expect(printed().deposits).toEqual([
      expect.objectContaining({ deposit_id: toRefund, refund: expect.objectContaining({ state: 'INTENT' }) }),
    ]);
    const audit = await store.db
      .selectFrom('audit_log')
      .select(['action', 'subject'])
      .where('subject', 'in', [toCredit, toRefund])
      .execute();
    expect(audit).toEqual(
      expect.arrayContaining([
        { action: 'deposit.credited_by_override', subject: toCredit },
        { action: 'deposit.refund_requested', subject: toRefund },
      ]),
    );
  });

  it('refuses anyone but an admin, a short reason, a bad id or state; a deposit not HELD is a refusal, not a crash', async () => {
    const id = await held();
    const run = (values: Record<string, string>) =>
      command('deposits credit').run({ id, reason: 'a good reason', 'admin-email': emails.admin, ...values }, cli);
    await expect(run({ 'admin-email': emails.renter })).rejects.toThrow(CliRefusal);
    await expect(run({ reason: 'no' })).rejects.toThrow(CliRefusal);
    await expect(run({ id: 'nope' })).rejects.toThrow(CliRefusal);
    await expect(command('deposits held').run({ state: 'CREDITED' }, cli)).rejects.toThrow(CliRefusal);
    expect(await run({})).toBe(0);
    await expect(command('deposits refund').run({ id, reason: 'a good reason', 'admin-email': emails.admin }, cli)).rejects.toMatchObject({
      code: 'DEPOSIT_NOT_HELD',
    });
  });
});
