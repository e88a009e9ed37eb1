import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../clock.js';
import { paymentsConfigFrom } from '../../config/payments.js';
import { ledgerAccounts } from '../../domain/ledger/accounts.js';
import { balanceOf, runTransfer } from '../../store/ledger.js';
import { bearer, createTestApp, type SeededAccount, seedAccount, seedAgent, type TestApp, testConfig } from '../../testing/app.js';
import { writeChainsFile } from '../../testing/deposits.js';
import { enrollDirect } from '../../testing/hosting.js';
import { agentHeartbeat, deliver, fund, meterReceipt, reserveJob, runJob } from '../../testing/renting.js';
import { DIALECTS } from '../../testing/stores.js';

// Money out by balance, not by role (issue 22): any account may hold both balances and the request names the one it
// draws; a withdrawal needs the renter scope and a payout the host scope, and a step-up never stands in for a scope.

type Json = Record<string, any>;
const evmAddress = () => `0x${randomBytes(20).toString('hex')}`;

describe.each(DIALECTS)('withdrawals and payouts by balance on %s', (dialect) => {
  let t: TestApp<ManualClock>;

  beforeAll(async () => {
    // Withdrawals are configured on a chain nothing is sent to here (no payer runs): requests stay INTENT.
    const payments = paymentsConfigFrom({ ARK_CHAINS: writeChainsFile() }, (m) => new Error(m));
    const base = testConfig();
    t = await createTestApp(dialect, {
      configOverrides: { payments: { ...base.payments, ...payments }, payouts: { ...base.payouts, minMicro: 1n } },
    });
  });
  afterAll(async () => {
    await t.destroy();
  });

  const post = (token: string, url: string, payload: Json) =>
    t.app.inject({ method: 'POST', url, headers: { ...bearer(token), 'idempotency-key': randomUUID() }, payload });
  const addressOf = async (token: string) => {
    const res = await post(token, '/api/v1/withdrawal-addresses', { address: evmAddress() });
    expect(res.statusCode, res.body).toBe(201);
    return res.json().id as string;
  };
  const withdraw = (token: string, body: Json) => post(token, '/api/v1/withdrawals', body);
  const available = (accountId: string) => balanceOf(t.store.db, ledgerAccounts.available(accountId));
  const payable = (accountId: string) => balanceOf(t.store.db, ledgerAccounts.payable(accountId));
  const pending = (accountId: string) => balanceOf(t.store.db, ledgerAccounts.pending(accountId));
  /** The maturity worker's step, run as it would run once ARK_EARNINGS_MATURITY_S (24 h here) has passed. */
  const matureAll = () => t.ctx.services.withdrawals.matureEarnings(new Date(t.clock.now().getTime() + 86_400_000));

  /**
   * Hosting turned on by the account's own key, a live machine, another renter's job metered on it for a minute: the
   * host's share lands as pending earnings (issue 24). Answers how much.
   */
  async function earnPendingOnAMachine(hostAccount: SeededAccount): Promise<bigint> {
    const machineId = await enrollDirect(t.app, hostAccount);
    await agentHeartbeat(t.ctx, machineId);
    const offer = await t.store.db.selectFrom('offers').select('id').where('machine_id', '=', machineId).executeTakeFirstOrThrow();
    const renter = await seedAccount(t.ctx);
    await fund(t.ctx, renter.accountId, 100_000_000n);
    const { jobId } = await reserveJob(t.app, renter, { host: hostAccount, machineId, offerId: offer.id });
    const start = await runJob(t, machineId, jobId);
    await t.clock.advance(60_000);
    await deliver(t.ctx, machineId, meterReceipt(jobId, 1, 1, start, new Date(start.getTime() + 60_000)));
    return pending(hostAccount.accountId);
  }

  /** The same, matured: what was earned is payable. */
  async function earnOnAMachine(hostAccount: SeededAccount): Promise<bigint> {
    const payableBefore = await payable(hostAccount.accountId);
    const earned = await earnPendingOnAMachine(hostAccount);
    await matureAll();
    expect(await pending(hostAccount.accountId)).toBe(0n);
    expect((await payable(hostAccount.accountId)) - payableBefore).toBe(earned);
    return earned;
  }

  it('pays a renter-role account that turned hosting on its payable earnings, as a payout', async () => {
    const renterHost = await seedAccount(t.ctx, { role: 'renter', stepUp: true });
    // Before it hosts, its session has no host scope: a payout is refused before any balance is read.
    const early = await withdraw(renterHost.sessionToken, {
      balance: 'payable',
      amount_micro: '1',
      withdrawal_address_id: await addressOf(renterHost.sessionToken),
    });
    expect(early.statusCode, early.body).toBe(403);
    expect(early.json().error.code).toBe('SCOPE_REQUIRED');

    const earned = await earnOnAMachine(renterHost);
    expect(earned).toBeGreaterThan(0n);
    await fund(t.ctx, renterHost.accountId, 5_000_000n);
    const addressId = await addressOf(renterHost.sessionToken);
    const paid = await withdraw(renterHost.sessionToken, {
      balance: 'payable',
      amount_micro: earned.toString(),
      withdrawal_address_id: addressId,
    });
    expect(paid.statusCode, paid.body).toBe(202);
    expect(paid.json()).toMatchObject({ kind: 'payout', state: 'INTENT', amount_micro: earned.toString() });
    // Drawn from payable, locked for the request; the available balance is untouched.
    expect(await payable(renterHost.accountId)).toBe(0n);
    expect(await balanceOf(t.store.db, ledgerAccounts.lock(paid.json().id, renterHost.accountId))).toBe(earned);
    expect(await available(renterHost.accountId)).toBe(5_000_000n);

    // The same account withdraws its available balance, and a request naming none still withdraws (its role's default).
    const withdrawn = await withdraw(renterHost.sessionToken, {
      balance: 'available',
      amount_micro: '2000000',
      withdrawal_address_id: addressId,
    });
    expect(withdrawn.statusCode, withdrawn.body).toBe(202);
    expect(withdrawn.json().kind).toBe('withdrawal');
    const unnamed = await withdraw(renterHost.sessionToken, { amount_micro: '1000000', withdrawal_address_id: addressId });
    expect(unnamed.json().kind).toBe('withdrawal');
    expect(await available(renterHost.accountId)).toBe(2_000_000n);

    // Nothing more is payable: a second payout finds no balance.
    const again = await withdraw(renterHost.sessionToken, { balance: 'payable', amount_micro: '1', withdrawal_address_id: addressId });
    expect(again.statusCode).toBe(409);
    expect(again.json().error.code).toBe('INSUFFICIENT_BALANCE');
  });

  it('pays out only matured earnings: pending ones are refused as INSUFFICIENT_BALANCE until their maturity (issue 24)', async () => {
    const host = await seedAccount(t.ctx, { role: 'host', stepUp: true });
    const addressId = await addressOf(host.sessionToken);
    const earned = await earnPendingOnAMachine(host);
    expect(earned).toBeGreaterThan(0n);
    expect(await payable(host.accountId)).toBe(0n);
    const body = { balance: 'payable', amount_micro: earned.toString(), withdrawal_address_id: addressId };
    const early = await withdraw(host.sessionToken, body);
    expect(early.statusCode, early.body).toBe(409);
    expect(early.json().error.code).toBe('INSUFFICIENT_BALANCE');
    // The earnings view shows the money pending, and when it becomes payable.
    const shown = await t.app.inject({ method: 'GET', url: '/api/v1/hosts/earnings', headers: bearer(host.sessionToken) });
    expect(shown.statusCode, shown.body).toBe(200);
    expect(shown.json()).toMatchObject({ pending_micro: earned.toString(), payable_micro: '0' });
    expect(Date.parse(shown.json().next_matures_at)).toBeGreaterThan(t.clock.now().getTime());
    // Not a moment before its maturity; then once, whatever runs the step again.
    await t.ctx.services.withdrawals.matureEarnings(t.clock.now());
    expect((await withdraw(host.sessionToken, body)).statusCode).toBe(409);
    await matureAll();
    await matureAll();
    expect(await pending(host.accountId)).toBe(0n);
    expect(await payable(host.accountId)).toBe(earned);
    const paid = await withdraw(host.sessionToken, body);
    expect(paid.statusCode, paid.body).toBe(202);
    expect(paid.json()).toMatchObject({ kind: 'payout', amount_micro: earned.toString() });
    expect(await payable(host.accountId)).toBe(0n);
  });

  it('lets a host-role account withdraw what it deposited, and pays it out by default', async () => {
    const host = await seedAccount(t.ctx, { role: 'host', stepUp: true });
    await fund(t.ctx, host.accountId, 3_000_000n);
    const addressId = await addressOf(host.sessionToken);
    const withdrawn = await withdraw(host.sessionToken, {
      balance: 'available',
      amount_micro: '3000000',
      withdrawal_address_id: addressId,
    });
    expect(withdrawn.statusCode, withdrawn.body).toBe(202);
    expect(withdrawn.json()).toMatchObject({ kind: 'withdrawal', amount_micro: '3000000' });
    expect(await available(host.accountId)).toBe(0n);

    // A request naming no balance keeps the old meaning for a host-role account: a payout (of nothing here).
    const unnamed = await withdraw(host.sessionToken, { amount_micro: '1', withdrawal_address_id: addressId });
    expect(unnamed.statusCode).toBe(409);
    expect(unnamed.json().error.code).toBe('INSUFFICIENT_BALANCE');
    const earned = await earnOnAMachine(host);
    const paid = await withdraw(host.sessionToken, { amount_micro: earned.toString(), withdrawal_address_id: addressId });
    expect(paid.json()).toMatchObject({ kind: 'payout', amount_micro: earned.toString() });
  });

  it('asks each key for the scope of the balance it draws; a step-up never stands in for it', async () => {
    // An agent's keys, each stepped up by its sign-in wallet: renter only, host only, both.
    const agent = await seedAgent(t.ctx, { keys: [['renter'], ['host'], ['renter', 'host']] });
    const [renterKey, hostKey, bothKey] = agent.apiKeys as [string, string, string];
    await fund(t.ctx, agent.accountId, 10_000_000n);
    // Earnings credited as an operator's adjustment: what matters here is only that payable holds them.
    await runTransfer(t.store, {
      from: ledgerAccounts.adjustment(),
      to: ledgerAccounts.payable(agent.accountId),
      amountMicro: 10_000_000n,
      kind: 'adjustment',
      reference: `test-earnings-${randomUUID()}`,
      at: t.clock.now(),
    });
    const addressId = await addressOf(hostKey);
    const ask = (key: string, balance: 'available' | 'payable') =>
      withdraw(key, { balance, amount_micro: '1000000', withdrawal_address_id: addressId });

    for (const [key, balance] of [
      [hostKey, 'available'],
      [renterKey, 'payable'],
    ] as const) {
      const refused = await ask(key, balance);
      expect(refused.statusCode, `${balance}: ${refused.body}`).toBe(403);
      expect(refused.json().error).toMatchObject({
        code: 'SCOPE_REQUIRED',
        message: `This operation needs the ${balance === 'payable' ? 'host' : 'renter'} scope.`,
      });
    }
    // Nothing was locked by the refusals.
    expect(await available(agent.accountId)).toBe(10_000_000n);
    expect(await payable(agent.accountId)).toBe(10_000_000n);

    expect((await ask(renterKey, 'available')).json().kind).toBe('withdrawal');
    expect((await ask(hostKey, 'payable')).json().kind).toBe('payout');
    expect((await ask(bothKey, 'available')).json().kind).toBe('withdrawal');
    expect((await ask(bothKey, 'payable')).json().kind).toBe('payout');
    expect(await available(agent.accountId)).toBe(8_000_000n);
    expect(await payable(agent.accountId)).toBe(8_000_000n);
  });

  it('never steps an API key up with a password or TOTP code; the account’s session it steps up', async () => {
    const person = await seedAccount(t.ctx, { role: 'renter' });
    const keyed = await post(person.apiKey, '/api/v1/account/step-up', { password: person.password });
    expect(keyed.statusCode, keyed.body).toBe(403);
    expect(keyed.json().error.code).toBe('FORBIDDEN');
    const steppedUp = await post(person.sessionToken, '/api/v1/account/step-up', { password: person.password });
    expect(steppedUp.statusCode, steppedUp.body).toBe(200);
    // A password step-up already on a key (recorded before this rule) does not count either.
    const key = await t.store.db.selectFrom('api_keys').select('id').where('account_id', '=', person.accountId).executeTakeFirstOrThrow();
    await t.store.db
      .updateTable('api_keys')
      .set({ step_up_method: 'password', step_up_until: new Date(t.clock.now().getTime() + 600_000).toISOString() })
      .where('id', '=', key.id)
      .execute();
    const stale = await post(person.apiKey, '/api/v1/withdrawal-addresses', { address: evmAddress() });
    expect(stale.statusCode).toBe(403);
    expect(stale.json().error.code).toBe('STEP_UP_REQUIRED');
    expect((await post(person.sessionToken, '/api/v1/withdrawal-addresses', { address: evmAddress() })).statusCode).toBe(201);
  });
});
