import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../clock.js';
import { paymentsConfigFrom } from '../../config-payments.js';
import { ledgerAccounts } from '../../domain/ledger/accounts.js';
import { chainCreditRef } from '../../domain/payments/deposits.js';
import { type SeenDeposit, upsertSeenDeposits } from '../../store/deposits.js';
import { balanceOf, postingByExternalRef, runTransfer, verifyLedger } from '../../store/ledger.js';
import { createTestStore, DIALECTS, type TestStore } from '../../testing/stores.js';
import { releaseHeldDeposits, settleFinalDeposit } from './deposit-credit.js';
import type { DepositDeps } from './deposit-deps.js';
import { paidAdmissionGuard } from '../admissions/guard.js';

const USDC = 1_000_000n;
let counter = 0;

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
    counter++;
    const deposit: SeenDeposit = {
      chainId: 8453,
      network: 'base',
      txHash: `0x${counter.toString(16).padStart(64, 'a')}`,
      logIndex: 0,
      accountId,
      address: `0x${'1'.repeat(40)}`,
      asset: 'USDC',
      tokenAddress: `0x${'2'.repeat(40)}`,
      amountRaw: amountMicro,
      decimals: 6,
      amountMicro,
      blockNumber: 10n,
      blockHash: `0x${'3'.repeat(64)}`,
    };
    await store.db.transaction().execute((trx) => upsertSeenDeposits(trx, [deposit], deps.clock.now()));
    const row = await store.db.selectFrom('chain_deposits').select('id').where('tx_hash', '=', deposit.txHash).executeTakeFirstOrThrow();
    return { id: row.id, txHash: deposit.txHash };
  };
  const available = (accountId: string) => balanceOf(store.db, ledgerAccounts.available(accountId));
  const stateOf = async (id: string) =>
    (await store.db.selectFrom('chain_deposits').selectAll().where('id', '=', id).executeTakeFirstOrThrow()).state;

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

  it('records a deposit below the minimum without crediting it', async () => {
    const account = crypto.randomUUID();
    const d = await seen(account, 999_999n);
    expect(await settleFinalDeposit(deps, d.id, { amountMicro: 999_999n, price: null })).toBe('below_minimum');
    expect(await available(account)).toBe(0n);
    expect(await stateOf(d.id)).toBe('BELOW_MINIMUM');
  });

  it('holds over the cap, queues younger deposits behind a held one, and releases them oldest first once there is room', async () => {
    const account = crypto.randomUUID();
    const first = await seen(account, 8n * USDC);
    expect(await settleFinalDeposit(deps, first.id, { amountMicro: 8n * USDC, price: null })).toBe('credited');
    const big = await seen(account, 6n * USDC);
    expect(await settleFinalDeposit(deps, big.id, { amountMicro: 6n * USDC, price: null })).toBe('held');
    const small = await seen(account, 1n * USDC);
    // It would fit (8 + 1 <= 10), but the older held deposit goes first.
    expect(await settleFinalDeposit(deps, small.id, { amountMicro: 1n * USDC, price: null })).toBe('held');
    expect(await releaseHeldDeposits(deps)).toBe(0);
    // The renter reserves a job: 5 USDC leave available for a hold, which makes room for both (3 + 6 + 1 = 10).
    await runTransfer(store, {
      from: ledgerAccounts.available(account),
      to: ledgerAccounts.hold(crypto.randomUUID(), account),
      amountMicro: 5n * USDC,
      kind: 'reservation',
      reference: 'job',
      at: deps.clock.now(),
    });
    expect(await releaseHeldDeposits(deps)).toBe(2);
    expect(await stateOf(big.id)).toBe('CREDITED');
    expect(await stateOf(small.id)).toBe('CREDITED');
    expect(await available(account)).toBe(10n * USDC);
    expect(await releaseHeldDeposits(deps)).toBe(0);
  });
});
