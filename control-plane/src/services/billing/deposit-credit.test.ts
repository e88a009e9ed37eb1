import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../clock.js';
import { paymentsConfigFrom } from '../../config/payments.js';
import { ledgerAccounts } from '../../domain/ledger/accounts.js';
import { chainCreditRef } from '../../domain/payments/deposits.js';
import { balanceOf, postingByExternalRef, runTransfer, verifyLedger } from '../../store/ledger.js';
import { recordSeen, seenUsdcDeposit } from '../../testing/deposits.js';
import { createTestStore, DIALECTS, type TestStore } from '../../testing/stores.js';
import { paidAdmissionGuard } from '../admissions/guard.js';
import { releaseHeldDeposits, settleFinalDeposit } from './deposit-credit.js';
import type { DepositDeps } from './deposit-deps.js';

const USDC = 1_000_000n;

describe.each(DIALECTS)('final deposits on %s', (dialect) => {
  let store: TestStore;
  let deps: DepositDeps;
  beforeAll(async () => {
    store = await createTestStore(dialect);
    const clock = new ManualClock();
    deps = {
      store,
      clock,
      payments: paymentsConfigFrom({ ARK_BALANCE_CAP_MICRO: String(10n * USDC) }, (m) => new Error(m)),
      deriver: null,
      admissions: paidAdmissionGuard({ clock }),
    };
  });
  afterAll(async () => {
    expect((await verifyLedger(store)).ok).toBe(true);
    await store.destroy();
  });

  const seen = async (accountId: string, amountMicro: bigint): Promise<{ id: string; txHash: string }> => {
    const deposit = seenUsdcDeposit(accountId, amountMicro);
    (deps.clock as ManualClock).advance(1000);
    return { id: await recordSeen(store, deposit, deps.clock.now()), txHash: deposit.txHash };
  };
  /** A deposit seen, then final: its decision. */
  const arrive = async (accountId: string, amountMicro: bigint) => {
    const d = await seen(accountId, amountMicro);
    return { ...d, outcome: await settleFinalDeposit(deps, d.id, { amountMicro, price: null }) };
  };
  const available = (accountId: string) => balanceOf(store.db, ledgerAccounts.available(accountId));
  const rowOf = (id: string) => store.db.selectFrom('chain_deposits').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
  const stateOf = async (id: string) => (await rowOf(id)).state;
  const reserve = (accountId: string, amountMicro: bigint) =>
    runTransfer(store, {
      from: ledgerAccounts.available(accountId),
      to: ledgerAccounts.hold(crypto.randomUUID(), accountId),
      amountMicro,
      kind: 'reservation',
      reference: 'job',
      at: deps.clock.now(),
    });

  it('credits once, with the exactly-once key, however often or concurrently it is settled', async () => {
    const account = crypto.randomUUID();
    const d = await seen(account, 5n * USDC);
    const outcomes = await Promise.all([1, 2, 3].map(() => settleFinalDeposit(deps, d.id, { amountMicro: 5n * USDC, price: null })));
    expect(outcomes.filter((o) => o === 'credited')).toHaveLength(1);
    expect(outcomes.filter((o) => o === 'already_final')).toHaveLength(2);
    expect(await settleFinalDeposit(deps, d.id, { amountMicro: 5n * USDC, price: null })).toBe('already_final');
    expect(await available(account)).toBe(5n * USDC);
    expect(await postingByExternalRef(store.db, chainCreditRef(8453, d.txHash, 0))).toMatchObject({
      amountMicro: 5n * USDC,
      kind: 'deposit',
    });
    expect(await stateOf(d.id)).toBe('CREDITED');
  });

  it('records the sender of each deposit (a refund goes back to it)', async () => {
    const account = crypto.randomUUID();
    const d = await seen(account, 2n * USDC);
    expect((await rowOf(d.id)).from_address).toBe(`0x${'5'.repeat(40)}`);
  });

  it('credits a younger deposit that fits although an older one over the cap is held, and keeps the big one for an operator', async () => {
    const account = crypto.randomUUID();
    const big = await arrive(account, 11n * USDC);
    expect(big.outcome).toBe('held');
    expect(await rowOf(big.id)).toMatchObject({ state: 'HELD', reason: 'exceeds_balance_cap' });
    // Before issue 22 this waited behind the big one, forever: a deposit bigger than the cap never has room.
    const small = await arrive(account, 2n * USDC);
    expect(small.outcome).toBe('credited');
    expect(await available(account)).toBe(2n * USDC);
    // Room never comes for the big one: release leaves it HELD, for an operator to credit or refund.
    await reserve(account, 2n * USDC);
    expect(await releaseHeldDeposits(deps)).toBe(0);
    expect(await stateOf(big.id)).toBe('HELD');
  });

  it('releases past a held deposit that does not fit to a younger one that does', async () => {
    const account = crypto.randomUUID();
    expect((await arrive(account, 8n * USDC)).outcome).toBe('credited');
    const six = await arrive(account, 6n * USDC);
    const three = await arrive(account, 3n * USDC);
    expect([six.outcome, three.outcome]).toEqual(['held', 'held']);
    expect(await rowOf(six.id)).toMatchObject({ reason: 'balance_cap' });
    // 5 USDC left available: the younger 3 fits (5 + 3 <= 10), the older 6 does not (5 + 6 > 10).
    await reserve(account, 3n * USDC);
    expect(await releaseHeldDeposits(deps)).toBe(1);
    expect(await stateOf(six.id)).toBe('HELD');
    expect(await stateOf(three.id)).toBe('CREDITED');
    expect(await available(account)).toBe(8n * USDC);
    await reserve(account, 4n * USDC);
    expect(await releaseHeldDeposits(deps)).toBe(1);
    expect(await stateOf(six.id)).toBe('CREDITED');
    expect(await available(account)).toBe(10n * USDC);
  });

  it('credits an older held deposit that fits now before a new one (fairness)', async () => {
    const account = crypto.randomUUID();
    expect((await arrive(account, 8n * USDC)).outcome).toBe('credited');
    const older = await arrive(account, 6n * USDC);
    expect(older.outcome).toBe('held');
    // Room for one 6 appears; a new 6 arrives before any release step runs: the older one takes the room.
    await reserve(account, 5n * USDC);
    const newer = await arrive(account, 6n * USDC);
    expect(await stateOf(older.id)).toBe('CREDITED');
    expect(newer.outcome).toBe('held');
    expect(await available(account)).toBe(9n * USDC);
  });

  it('adds deposits below the minimum up per address, and credits them together once they reach it', async () => {
    const account = crypto.randomUUID();
    const a = await arrive(account, 400_000n);
    const b = await arrive(account, 400_000n);
    expect([a.outcome, b.outcome]).toEqual(['below_minimum', 'below_minimum']);
    expect(await available(account)).toBe(0n);
    const c = await arrive(account, 300_000n);
    expect(c.outcome).toBe('credited');
    for (const d of [a, b, c]) {
      expect(await rowOf(d.id)).toMatchObject({ state: 'CREDITED', amount_micro: d === c ? 300_000n : 400_000n });
      // Each with its own exactly-once posting, keyed by its own transfer.
      expect(await postingByExternalRef(store.db, chainCreditRef(8453, d.txHash, 0))).toMatchObject({ kind: 'deposit' });
    }
    expect(await available(account)).toBe(1_100_000n);
    // A deposit over the minimum takes the small ones along.
    const dust = await arrive(account, 200_000n);
    expect(dust.outcome).toBe('below_minimum');
    expect((await arrive(account, 2n * USDC)).outcome).toBe('credited');
    expect(await stateOf(dust.id)).toBe('CREDITED');
    expect(await available(account)).toBe(3_300_000n);
  });

  it('holds small deposits that reached the minimum together when they do not fit, and releases each as room comes', async () => {
    const account = crypto.randomUUID();
    expect((await arrive(account, 9_500_000n)).outcome).toBe('credited');
    const a = await arrive(account, 600_000n);
    expect(a.outcome).toBe('below_minimum');
    const b = await arrive(account, 600_000n);
    expect(b.outcome).toBe('held');
    expect(await stateOf(a.id)).toBe('HELD');
    await reserve(account, 1n * USDC);
    expect(await releaseHeldDeposits(deps)).toBe(2);
    expect(await available(account)).toBe(9_700_000n);
  });
});
