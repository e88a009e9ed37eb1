import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../clock.js';
import { paymentsConfigFrom } from '../../config/payments.js';
import { finishDeposit } from '../../store/deposits.js';
import { bearer, createTestApp, type SeededAccount, seedAccount, type TestApp, testConfig } from '../../testing/app.js';
import { recordSeen, seenUsdcDeposit, writeChainsFile } from '../../testing/deposits.js';
import { DIALECTS } from '../../testing/stores.js';

const USDC = 1_000_000n;

// The admin routes for held deposits (issue 22): the queue, and credit or refund with TOTP step-up, an
// Idempotency-Key and an audited reason.
describe.each(DIALECTS)('admin deposit routes on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  let admin: SeededAccount;
  let renter: SeededAccount;
  beforeAll(async () => {
    const payments = paymentsConfigFrom({ ARK_CHAINS: writeChainsFile(), ARK_BALANCE_CAP_MICRO: String(10n * USDC) }, (m) => new Error(m));
    t = await createTestApp(dialect, { configOverrides: { payments: { ...testConfig().payments, ...payments } } });
    admin = await seedAccount(t.ctx, { role: 'admin', withTotp: true, stepUp: true });
    renter = await seedAccount(t.ctx);
  });
  afterAll(async () => {
    await t.destroy();
  });

  /** A final deposit of the renter over the cap, HELD as the watcher leaves it. */
  const held = async (amountMicro = 11n * USDC) => {
    t.clock.advance(1000);
    const id = await recordSeen(t.store, seenUsdcDeposit(renter.accountId, amountMicro), t.clock.now());
    await t.store.db.transaction().execute((trx) =>
      finishDeposit(trx, id, 'SEEN', 'HELD', {
        amountMicro,
        reason: 'exceeds_balance_cap',
        price: null,
        postingId: null,
        at: t.clock.now(),
      }),
    );
    return id;
  };
  const act = (id: string, action: 'credit' | 'refund', body: unknown, key: string = randomUUID(), token = admin.sessionToken) =>
    t.app.inject({
      method: 'POST',
      url: `/api/v1/admin/deposits/${id}/${action}`,
      headers: { ...bearer(token), 'idempotency-key': key },
      payload: body as object,
    });
  const list = async (state?: string) => {
    const response = await t.app.inject({
      method: 'GET',
      url: `/api/v1/admin/deposits?limit=100${state ? `&state=${state}` : ''}`,
      headers: bearer(admin.sessionToken),
    });
    expect(response.statusCode).toBe(200);
    return response.json().items as any[];
  };
  const renterDeposit = async (id: string) => {
    const balance = await t.app.inject({ method: 'GET', url: '/api/v1/billing/balance?limit=100', headers: bearer(renter.apiKey) });
    return (balance.json().deposits.items as any[]).find((d) => d.deposit_id === id);
  };

  it('lists HELD deposits with what an operator can do with them', async () => {
    const id = await held();
    const item = (await list()).find((d) => d.deposit_id === id);
    expect(item).toMatchObject({
      state: 'HELD',
      account_id: renter.accountId,
      from_address: `0x${'5'.repeat(40)}`,
      amount_micro: String(11n * USDC),
      reason: 'exceeds_balance_cap',
      needs_operator: true,
      refund_refusal: null,
      refund: null,
    });
    // A renter's session is not an admin's.
    const refused = await t.app.inject({ method: 'GET', url: '/api/v1/admin/deposits', headers: bearer(renter.sessionToken) });
    expect(refused.statusCode).toBe(403);
  });

  it('credits by override with an audited reason; the same key replays the answer, another key answers already', async () => {
    const id = await held();
    expect((await act(id, 'credit', { reason: 'no' })).statusCode).toBe(422);
    const key = randomUUID();
    const credited = await act(id, 'credit', { reason: 'verified with the customer' }, key);
    expect(credited.statusCode, credited.body).toBe(200);
    expect(credited.json()).toEqual({
      deposit_id: id,
      action: 'credit',
      state: 'CREDITED',
      amount_micro: String(11n * USDC),
      refund_id: null,
      refund_to: null,
      already: false,
    });
    const replay = await act(id, 'credit', { reason: 'verified with the customer' }, key);
    expect(replay.statusCode).toBe(200);
    expect(replay.json()).toEqual(credited.json());
    expect((await act(id, 'credit', { reason: 'verified with the customer' })).json()).toMatchObject({ already: true });
    expect(await renterDeposit(id)).toMatchObject({ state: 'CREDITED', credited_micro: String(11n * USDC), reason: 'operator_override' });
    const balance = await t.app.inject({ method: 'GET', url: '/api/v1/billing/balance', headers: bearer(renter.apiKey) });
    expect(balance.json().available_micro).toBe(String(11n * USDC));
    const refund = await act(id, 'refund', { reason: 'changed my mind' });
    expect(refund.statusCode).toBe(409);
    expect(refund.json().error.code).toBe('DEPOSIT_NOT_HELD');
    const audit = await t.app.inject({ method: 'GET', url: '/api/v1/admin/audit?limit=100', headers: bearer(admin.sessionToken) });
    expect(audit.json().items).toContainEqual(
      expect.objectContaining({
        action: 'deposit.credited_by_override',
        subject: id,
        actor_account_id: admin.accountId,
        detail: expect.objectContaining({ reason: 'verified with the customer' }),
      }),
    );
  });

  it('refunds to the sender through the payout path: REFUNDING for the renter and in the operators’ queue', async () => {
    const id = await held();
    const refunded = await act(id, 'refund', { reason: 'sender asked for it back' });
    expect(refunded.statusCode, refunded.body).toBe(202);
    expect(refunded.json()).toMatchObject({
      deposit_id: id,
      action: 'refund',
      state: 'REFUNDING',
      refund_to: `0x${'5'.repeat(40)}`,
      already: false,
    });
    expect(await renterDeposit(id)).toMatchObject({ state: 'REFUNDING', credited_micro: null });
    const queued = (await list('REFUNDING')).find((d) => d.deposit_id === id);
    expect(queued).toMatchObject({
      refund: { id: refunded.json().refund_id, state: 'INTENT', tx_hash: null },
      resolved_by: admin.accountId,
      resolution_reason: 'sender asked for it back',
    });
    expect((await list()).some((d) => d.deposit_id === id)).toBe(false);
    expect((await act(id, 'credit', { reason: 'credit it after all' })).json().error.code).toBe('DEPOSIT_NOT_HELD');
    expect((await act(id, 'refund', { reason: 'sender asked for it back' })).json()).toMatchObject({ already: true });
    // The refund is not the renter's withdrawal: its list stays empty.
    const withdrawals = await t.app.inject({ method: 'GET', url: '/api/v1/withdrawals', headers: bearer(renter.apiKey) });
    expect(withdrawals.json().items).toEqual([]);
  });

  it('needs a TOTP step-up, and answers 404 for an unknown deposit', async () => {
    const id = await held();
    const plain = await seedAccount(t.ctx, { role: 'admin', withTotp: true });
    const refused = await act(id, 'credit', { reason: 'without a step-up' }, randomUUID(), plain.sessionToken);
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.code).toBe('STEP_UP_REQUIRED');
    expect((await act(randomUUID(), 'refund', { reason: 'no such deposit' })).statusCode).toBe(404);
  });
});
