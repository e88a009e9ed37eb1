import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FEE_SHARDS, ledgerAccountKey, ledgerAccounts } from '../domain/ledger/accounts.js';
import { createTestStore, DIALECTS, type TestStore } from '../testing/stores.js';
import { feesAccountOf, takeFromFees } from './job-charges.js';
import { balanceOf, runTransfer, verifyLedger } from './ledger.js';

// The platform's fees over shards (domain/ledger/accounts.ts, FEE_SHARDS): which shard a charging transaction credits,
// that the shards exist on Postgres before any charge, and how a credit takes fees back from whichever shards hold them.

const at = new Date('2026-03-01T12:00:00.000Z');

describe.each(DIALECTS)('fees shards on %s', (dialect) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await createTestStore(dialect);
  });
  afterAll(async () => {
    await store.close();
  });

  /** Puts `micro` into fees shard `shard` the way charges do: a renter's deposit, a job's hold, a charge_fee. */
  async function feesInto(shard: number, micro: bigint): Promise<void> {
    const renter = randomUUID();
    const job = randomUUID();
    const move = (
      from: Parameters<typeof runTransfer>[1]['from'],
      to: Parameters<typeof runTransfer>[1]['to'],
      kind: 'deposit' | 'reservation' | 'charge_fee',
    ) => runTransfer(store, { from, to, amountMicro: micro, kind, reference: randomUUID(), at });
    await move(ledgerAccounts.external(), ledgerAccounts.available(renter), 'deposit');
    await move(ledgerAccounts.available(renter), ledgerAccounts.hold(job, renter), 'reservation');
    await move(ledgerAccounts.hold(job, renter), ledgerAccounts.fees(shard), 'charge_fee');
  }

  it('draws one fees account a transaction: shard 0 on SQLite, any shard on Postgres', async () => {
    const drawn = new Set<string>();
    for (let i = 0; i < 64; i++) {
      await store.db.transaction().execute(async (trx) => {
        const first = feesAccountOf(trx);
        expect(feesAccountOf(trx)).toEqual(first);
        expect(first.kind).toBe('fees');
        drawn.add(first.owner);
      });
    }
    if (dialect === 'sqlite') expect([...drawn]).toEqual(['platform']);
    // 64 draws of 16: all equal has odds of 16^-63.
    else expect(drawn.size).toBeGreaterThan(1);
  });

  it.runIf(dialect === 'postgres')('has every shard from the start, empty (a group posts before it locks)', async () => {
    const fresh = await createTestStore(dialect);
    try {
      const rows = await fresh.db
        .selectFrom('ledger_accounts')
        .select(['key', 'balance_micro'])
        .where('kind', '=', 'fees')
        .orderBy('key')
        .execute();
      const keys = Array.from({ length: FEE_SHARDS }, (_, shard) => ledgerAccountKey(ledgerAccounts.fees(shard).owner, 'fees')).sort();
      expect(rows.map((row) => row.key)).toEqual(keys);
      expect(rows.every((row) => BigInt(row.balance_micro) === 0n)).toBe(true);
    } finally {
      await fresh.close();
    }
  });

  it('takes fees back from shard 0 first, then the others, never more than a shard holds', async () => {
    await feesInto(0, 100n);
    await feesInto(3, 50n);
    await feesInto(FEE_SHARDS - 1, 25n);
    const take = (micro: bigint) => store.db.transaction().execute((trx) => takeFromFees(trx, micro));
    const owners = (takes: Awaited<ReturnType<typeof take>>) => takes.map((t) => [t.from.owner, t.amountMicro]);
    expect(await take(0n)).toEqual([]);
    expect(owners(await take(100n))).toEqual([['platform', 100n]]);
    expect(owners(await take(101n))).toEqual([
      ['platform', 100n],
      ['platform.3', 1n],
    ]);
    expect(owners(await take(175n))).toEqual([
      ['platform', 100n],
      ['platform.3', 50n],
      [`platform.${FEE_SHARDS - 1}`, 25n],
    ]);
    // More than the fees hold: refused, nothing moved (it only answers shares; the caller posts them).
    await expect(take(176n)).rejects.toThrow(/fees hold 175 of the 176/);
    expect(await balanceOf(store.db, ledgerAccounts.fees(3))).toBe(50n);
  });

  it('ignores a fees account that is no shard', async () => {
    const other = { kind: 'fees' as const, owner: `test-fees-${randomUUID()}`, accountId: null };
    const renter = randomUUID();
    const job = randomUUID();
    await runTransfer(store, {
      from: ledgerAccounts.external(),
      to: ledgerAccounts.available(renter),
      amountMicro: 1000n,
      kind: 'deposit',
      reference: randomUUID(),
      at,
    });
    await runTransfer(store, {
      from: ledgerAccounts.available(renter),
      to: ledgerAccounts.hold(job, renter),
      amountMicro: 1000n,
      kind: 'reservation',
      reference: randomUUID(),
      at,
    });
    await runTransfer(store, {
      from: ledgerAccounts.hold(job, renter),
      to: other,
      amountMicro: 1000n,
      kind: 'charge_fee',
      reference: randomUUID(),
      at,
    });
    await expect(store.db.transaction().execute((trx) => takeFromFees(trx, 176n))).rejects.toThrow(/fees hold 175 of the 176/);
    expect((await verifyLedger(store)).ok).toBe(true);
  });
});
