import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../clock.js';
import { paymentsConfigFrom } from '../../config/payments.js';
import { payoutsConfigFrom } from '../../config/payouts.js';
import { ledgerAccounts } from '../../domain/ledger/accounts.js';
import { MAX_TRANSFER_MICRO } from '../../domain/ledger/postings.js';
import { chainCreditRef } from '../../domain/payments/deposits.js';
import { DomainError } from '../../errors.js';
import { insertAccount } from '../../store/accounts.js';
import { balanceOf, postingByExternalRef, postingsByReference, runTransfer, verifyLedger } from '../../store/ledger.js';
import { listAccountWithdrawals } from '../../store/withdrawals.js';
import { MemoryPayoutWallet, recordSeen, seenUsdcDeposit, writeChainsFile } from '../../testing/deposits.js';
import { createTestStore, DIALECTS, type TestStore } from '../../testing/stores.js';
import { paidAdmissionGuard } from '../admissions/guard.js';
import type { WithdrawalDeps } from '../withdrawals/deps.js';
import { Payer } from '../withdrawals/payer.js';
import { reviewWithdrawal } from '../withdrawals/review.js';
import { settleFinalDeposit } from './deposit-credit.js';
import type { DepositDeps } from './deposit-deps.js';
import { creditHeldDeposit } from './deposit-override.js';
import { depositsForOperators } from './deposit-queue.js';
import { refundHeldDeposit } from './deposit-refund.js';

const USDC = 1_000_000n;
const SENDER = `0x${'5'.repeat(40)}`;

// An operator's way home for a HELD deposit (issue 22): credit it over the cap with a recorded override, or refund it
// to its sender through the real payer over an in-memory chain. Each exactly once, on both stores.
describe.each(DIALECTS)('held deposits resolved by an operator on %s', (dialect) => {
  let store: TestStore;
  let clock: ManualClock;
  let deps: DepositDeps;
  let withdrawals: WithdrawalDeps;
  let admin = '';
  beforeAll(async () => {
    store = await createTestStore(dialect);
    clock = new ManualClock();
    const payments = paymentsConfigFrom({ ARK_CHAINS: writeChainsFile(), ARK_BALANCE_CAP_MICRO: String(10n * USDC) }, (m) => new Error(m));
    deps = { store, clock, payments, deriver: null, admissions: paidAdmissionGuard({ clock }) };
    // The default holds (first withdrawal reviewed, new addresses held a day) apply to requests, not to refunds.
    withdrawals = { store, clock, payments, payouts: payoutsConfigFrom({}, (m) => new Error(m)) };
    admin = (
      await insertAccount(store.db, {
        email: `admin-${randomUUID()}@example.test`,
        passwordHash: null,
        name: null,
        role: 'admin',
        emailVerified: true,
        now: clock.now(),
      })
    ).id;
  });
  afterAll(async () => {
    expect((await verifyLedger(store)).ok).toBe(true);
    await store.destroy();
  });

  /** A deposit over the cap (11 USDC against 10), final and HELD. */
  const heldDeposit = async (overrides: Parameters<typeof seenUsdcDeposit>[2] = {}, amountMicro = 11n * USDC) => {
    const accountId = randomUUID();
    const deposit = seenUsdcDeposit(accountId, amountMicro, overrides);
    clock.advance(1000);
    const id = await recordSeen(store, deposit, clock.now());
    expect(await settleFinalDeposit(deps, id, { amountMicro, price: null })).toBe('held');
    return { id, accountId, txHash: deposit.txHash, ref: chainCreditRef(8453, deposit.txHash, 0) };
  };
  const rowOf = (id: string) => store.db.selectFrom('chain_deposits').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const available = (accountId: string) => balanceOf(store.db, ledgerAccounts.available(accountId));
  const decide = (id: string, reason = 'customer asked on ticket 42') => ({ depositId: id, adminAccountId: admin, reason });
  const refusal = (promise: Promise<unknown>) =>
    promise.then(
      () => null,
      (error: unknown) => (error instanceof DomainError ? error.code : error),
    );
  const payUntilSettled = async (payer: Payer) => {
    for (let i = 0; i < 4; i++) await payer.step();
  };

  it('credits a HELD deposit over the cap by override: audited, exactly once, a repeat answers the same', async () => {
    const d = await heldDeposit();
    const listed = await depositsForOperators(deps, 'HELD', null, 100);
    expect(listed.find((x) => x.deposit.id === d.id)).toMatchObject({ needsOperator: true, refundRefusal: null });
    const results = await Promise.all([creditHeldDeposit(deps, decide(d.id)), creditHeldDeposit(deps, decide(d.id))]);
    expect(results.map((r) => r.already).sort()).toEqual([false, true]);
    expect(results[0]).toMatchObject({ depositId: d.id, action: 'credit', state: 'CREDITED', amountMicro: 11n * USDC });
    expect(await available(d.accountId)).toBe(11n * USDC);
    expect(await rowOf(d.id)).toMatchObject({
      state: 'CREDITED',
      reason: 'operator_override',
      resolved_by: admin,
      resolution_reason: 'customer asked on ticket 42',
    });
    expect(await postingByExternalRef(store.db, d.ref)).toMatchObject({ kind: 'deposit', amountMicro: 11n * USDC });
    expect(await postingsByReference(store.db, `deposit:${d.id}`)).toHaveLength(1);
    const audit = await store.db.selectFrom('audit_log').selectAll().where('subject', '=', d.id).execute();
    expect(audit).toEqual([expect.objectContaining({ action: 'deposit.credited_by_override', actor_account_id: admin })]);
    expect(JSON.parse(audit[0]?.detail ?? '{}')).toMatchObject({ reason: 'customer asked on ticket 42', amount_micro: '11000000' });
    // Credited is final: it cannot be refunded as well.
    expect(await refusal(refundHeldDeposit(deps, decide(d.id)))).toBe('DEPOSIT_NOT_HELD');
  });

  it('lifts the cap only: one posting is still bounded, and a deposit not HELD is refused', async () => {
    const huge = await heldDeposit({}, MAX_TRANSFER_MICRO + 1n);
    expect(await refusal(creditHeldDeposit(deps, decide(huge.id)))).toBe('AMOUNT_TOO_LARGE');
    expect((await rowOf(huge.id)).state).toBe('HELD');
    const seenOnly = await recordSeen(store, seenUsdcDeposit(randomUUID(), 2n * USDC), clock.now());
    expect(await refusal(creditHeldDeposit(deps, decide(seenOnly)))).toBe('DEPOSIT_NOT_HELD');
    expect(await refusal(refundHeldDeposit(deps, decide(seenOnly)))).toBe('DEPOSIT_NOT_HELD');
    expect(await refusal(creditHeldDeposit(deps, decide(randomUUID())))).toBe('NOT_FOUND');
  });

  it('refunds a HELD deposit to its sender on chain exactly once, through the payer', async () => {
    const d = await heldDeposit();
    const refunded = await refundHeldDeposit(deps, decide(d.id, 'over the cap, sender asked'));
    expect(refunded).toMatchObject({ action: 'refund', state: 'REFUNDING', amountMicro: 11n * USDC, already: false });
    expect(refunded.refund).toMatchObject({ to: SENDER, state: 'INTENT' });
    // Its value is locked for the refund under the deposit's own exactly-once key: it can never also be credited.
    expect(await postingByExternalRef(store.db, d.ref)).toMatchObject({ kind: 'refund_lock', amountMicro: 11n * USDC });
    expect(await refusal(creditHeldDeposit(deps, decide(d.id)))).toBe('DEPOSIT_NOT_HELD');
    expect(
      await refusal(
        runTransfer(store, {
          from: ledgerAccounts.external('chain:8453'),
          to: ledgerAccounts.available(d.accountId),
          amountMicro: 11n * USDC,
          kind: 'deposit',
          reference: `deposit:${d.id}`,
          externalRef: d.ref,
          at: clock.now(),
        }),
      ),
    ).toBe('LEDGER_REFERENCE_CONFLICT');
    expect(await refundHeldDeposit(deps, decide(d.id))).toMatchObject({ already: true, refund: { id: refunded.refund?.id } });
    // Not the account's request: its withdrawals never list it, and the withdrawal review never sees it.
    expect(await listAccountWithdrawals(store.db, d.accountId, null, 10)).toEqual([]);
    const review = { id: refunded.refund?.id as string, adminAccountId: admin, decision: 'reject' as const, reason: 'not a request' };
    expect(await refusal(reviewWithdrawal(withdrawals, review))).toBe('NOT_FOUND');

    const wallet = new MemoryPayoutWallet();
    const payer = new Payer(withdrawals, wallet);
    await payUntilSettled(payer);
    expect(wallet.paid()).toEqual([{ to: SENDER, amount: 11n * USDC }]);
    expect(await rowOf(d.id)).toMatchObject({ state: 'REFUNDED', refund_id: refunded.refund?.id, resolved_by: admin });
    expect(await available(d.accountId)).toBe(0n);
    expect(await postingByExternalRef(store.db, `withdrawal-paid:${refunded.refund?.id}`)).toMatchObject({ kind: 'refund' });
    // More steps pay nothing again.
    await payUntilSettled(payer);
    expect(wallet.paid()).toHaveLength(1);
    const listed = await depositsForOperators(deps, 'REFUNDED', null, 100);
    expect(listed.find((x) => x.deposit.id === d.id)?.refund).toMatchObject({ state: 'CONFIRMED', txHash: expect.any(String) });
  });

  it('holds a deposit again when its refund fails on chain; an operator then credits it, once', async () => {
    const d = await heldDeposit();
    const refunded = await refundHeldDeposit(deps, decide(d.id));
    const wallet = new MemoryPayoutWallet();
    wallet.revert = true;
    // A fresh payer: the last one's lease runs out first.
    clock.advance(300_000);
    await payUntilSettled(new Payer(withdrawals, wallet));
    expect(wallet.paid()).toEqual([]);
    expect(await rowOf(d.id)).toMatchObject({ state: 'HELD', reason: 'refund_failed', refund_id: refunded.refund?.id });
    expect(await balanceOf(store.db, ledgerAccounts.lock(refunded.refund?.id as string, d.accountId))).toBe(0n);
    const credited = await creditHeldDeposit(deps, decide(d.id, 'refund reverted, credit instead'));
    expect(credited).toMatchObject({ state: 'CREDITED', already: false });
    expect(await available(d.accountId)).toBe(11n * USDC);
    expect(await postingByExternalRef(store.db, `${d.ref}:after-refund:${refunded.refund?.id}`)).toMatchObject({ kind: 'deposit' });
  });

  it('refunds only what the payout path can return: USDC of the primary network, to a known sender', async () => {
    const unknownSender = await heldDeposit({ fromAddress: null });
    expect(await refusal(refundHeldDeposit(deps, decide(unknownSender.id)))).toBe('DEPOSIT_NOT_REFUNDABLE');
    const otherToken = await heldDeposit({ tokenAddress: `0x${'7'.repeat(40)}`, asset: 'TUSD' });
    expect(await refusal(refundHeldDeposit(deps, decide(otherToken.id)))).toBe('DEPOSIT_NOT_REFUNDABLE');
    const listed = await depositsForOperators(deps, 'HELD', null, 100);
    expect(listed.find((x) => x.deposit.id === unknownSender.id)?.refundRefusal).toBe('sender_unknown');
    expect(listed.find((x) => x.deposit.id === otherToken.id)?.refundRefusal).toBe('asset_not_refundable');
    // Without a payout rail nothing can be paid: 503, retryable.
    const noRail = { ...deps, payments: paymentsConfigFrom({ ARK_BALANCE_CAP_MICRO: String(10n * USDC) }, (m) => new Error(m)) };
    const d = await heldDeposit();
    expect(await refusal(refundHeldDeposit(noRail, decide(d.id)))).toBe('UNAVAILABLE');
    expect((await rowOf(d.id)).state).toBe('HELD');
  });

  it('lets exactly one of a concurrent credit and refund through', async () => {
    const d = await heldDeposit();
    const [credit, refund] = await Promise.allSettled([creditHeldDeposit(deps, decide(d.id)), refundHeldDeposit(deps, decide(d.id))]);
    const won = [credit, refund].filter((r) => r.status === 'fulfilled');
    expect(won).toHaveLength(1);
    const lost = [credit, refund].find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect((lost.reason as DomainError).code).toBe('DEPOSIT_NOT_HELD');
    expect(['CREDITED', 'REFUNDING']).toContain((await rowOf(d.id)).state);
    const posting = await postingByExternalRef(store.db, d.ref);
    expect(posting?.kind).toBe((await rowOf(d.id)).state === 'CREDITED' ? 'deposit' : 'refund_lock');
  });
});
