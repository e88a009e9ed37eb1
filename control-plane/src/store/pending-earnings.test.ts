// Pending earnings on both stores (issue 24 item 4): a host charge lands as a pending lot, becomes payable at its
// maturity exactly once (two replicas' workers at the same moment move it once), a payout cannot draw pending money,
// and the ledger verification checks each host's pending balance against its lots.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerAccounts } from '../domain/ledger/accounts.js';
import { DomainError } from '../errors.js';
import { createTestStore, DIALECTS, type TestStore } from '../testing/stores.js';
import { postMeteredCharge } from './job-charges.js';
import { balanceOf, inTransactionWithRetry, transfer, verifyLedger } from './ledger.js';
import { matureDueLots, pendingSummaryOf } from './pending-earnings.js';

const t0 = new Date('2026-11-27T12:00:00.000Z');
const plus = (ms: number) => new Date(t0.getTime() + ms);

async function codeOf(promise: Promise<unknown>): Promise<string | null> {
  try {
    await promise;
    return null;
  } catch (error) {
    if (error instanceof DomainError) return error.code;
    throw error;
  }
}

describe.each(DIALECTS)('pending earnings on %s', (dialect) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await createTestStore(dialect);
  });
  afterAll(async () => {
    await store.destroy();
  });

  /** A renter with a funded job hold, and a fresh host. */
  async function funded(holdMicro: bigint) {
    const renter = randomUUID();
    const host = randomUUID();
    const jobId = randomUUID();
    await inTransactionWithRetry(store, async (trx) => {
      await transfer(trx, {
        from: ledgerAccounts.external(),
        to: ledgerAccounts.available(renter),
        amountMicro: holdMicro,
        kind: 'deposit',
        reference: renter,
        at: t0,
      });
      await transfer(trx, {
        from: ledgerAccounts.available(renter),
        to: ledgerAccounts.hold(jobId, renter),
        amountMicro: holdMicro,
        kind: 'reservation',
        reference: jobId,
        at: t0,
      });
    });
    return { renter, host, jobId };
  }

  const charge = (
    job: { renter: string; host: string; jobId: string },
    hostMicro: bigint,
    at: Date,
    maturesAt: Date | null,
    first = false,
  ) =>
    inTransactionWithRetry(store, (trx) =>
      postMeteredCharge(trx, {
        jobId: job.jobId,
        renterAccountId: job.renter,
        hostAccountId: job.host,
        hostMicro,
        feeMicro: 1n,
        first,
        at,
        maturesAt,
      }),
    );

  it('a charge lands as pending and becomes payable at its maturity, once, whoever runs the step', async () => {
    const job = await funded(100n);
    await charge(job, 30n, t0, plus(10_000), true);
    await charge(job, 20n, plus(5_000), plus(15_000));
    expect(await balanceOf(store.db, ledgerAccounts.pending(job.host))).toBe(50n);
    expect(await balanceOf(store.db, ledgerAccounts.payable(job.host))).toBe(0n);
    expect(await pendingSummaryOf(store.db, job.host)).toEqual({ pendingMicro: 50n, nextMaturesAt: plus(10_000) });

    // Not a millisecond early.
    await matureDueLots(store, plus(9_999));
    expect(await balanceOf(store.db, ledgerAccounts.payable(job.host))).toBe(0n);
    // Two replicas' workers at the same moment: the first lot moves once.
    await Promise.all([matureDueLots(store, plus(10_000)), matureDueLots(store, plus(10_000))]);
    expect(await balanceOf(store.db, ledgerAccounts.pending(job.host))).toBe(20n);
    expect(await balanceOf(store.db, ledgerAccounts.payable(job.host))).toBe(30n);
    expect(await pendingSummaryOf(store.db, job.host)).toEqual({ pendingMicro: 20n, nextMaturesAt: plus(15_000) });
    await Promise.all([matureDueLots(store, plus(20_000)), matureDueLots(store, plus(20_000)), matureDueLots(store, plus(21_000))]);
    expect(await balanceOf(store.db, ledgerAccounts.pending(job.host))).toBe(0n);
    expect(await balanceOf(store.db, ledgerAccounts.payable(job.host))).toBe(50n);
    expect(await pendingSummaryOf(store.db, job.host)).toEqual({ pendingMicro: 0n, nextMaturesAt: null });
    expect(await matureDueLots(store, plus(60_000))).toBe(0);
    expect(await verifyLedger(store)).toMatchObject({ ok: true, sumMicro: 0n, discrepancies: [] });
  });

  it('a payout draws only payable: pending earnings are refused as INSUFFICIENT_BALANCE until they mature', async () => {
    const job = await funded(100n);
    await charge(job, 40n, t0, plus(1_000), true);
    const payoutLock = () =>
      inTransactionWithRetry(store, (trx) =>
        transfer(trx, {
          from: ledgerAccounts.payable(job.host),
          to: ledgerAccounts.lock(randomUUID(), job.host),
          amountMicro: 40n,
          kind: 'payout_lock',
          reference: job.host,
          at: t0,
        }),
      );
    expect(await codeOf(payoutLock())).toBe('INSUFFICIENT_BALANCE');
    await matureDueLots(store, plus(1_000));
    expect(await codeOf(payoutLock())).toBeNull();
    expect(await balanceOf(store.db, ledgerAccounts.payable(job.host))).toBe(0n);
  });

  it('with maturity off a charge is payable at once and leaves no lot', async () => {
    const job = await funded(10n);
    await charge(job, 5n, t0, null, true);
    expect(await balanceOf(store.db, ledgerAccounts.payable(job.host))).toBe(5n);
    expect(await balanceOf(store.db, ledgerAccounts.pending(job.host))).toBe(0n);
    const lots = await store.db.selectFrom('pending_earnings').selectAll().where('host_account_id', '=', job.host).execute();
    expect(lots).toEqual([]);
  });

  it('the verification finds a pending balance its lots do not account for', async () => {
    const job = await funded(10n);
    await charge(job, 7n, t0, plus(1_000), true);
    await store.db.updateTable('pending_earnings').set({ remaining_micro: 6n }).where('host_account_id', '=', job.host).execute();
    const report = await verifyLedger(store);
    expect(report.ok).toBe(false);
    expect(report.discrepancies).toContainEqual({
      key: `pending:${job.host}`,
      problem: 'pending_lots_mismatch',
      cachedMicro: 7n,
      recomputedMicro: 6n,
    });
    await store.db.updateTable('pending_earnings').set({ remaining_micro: 7n }).where('host_account_id', '=', job.host).execute();
    expect((await verifyLedger(store)).ok).toBe(true);
  });
});
