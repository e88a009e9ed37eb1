import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LedgerAccountRef, ledgerAccountKey, ledgerAccounts } from '../domain/ledger/accounts.js';
import { DomainError } from '../errors.js';
import { createTestStore, DIALECTS, type TestStore } from '../testing/stores.js';
import {
  balanceOf,
  balancesOfOwner,
  inTransactionWithRetry,
  postingByExternalRef,
  postingsByReference,
  runTransfer,
  sumOfAllBalances,
  type TransferInput,
  transfer,
  verifyLedger,
} from './ledger.js';

const at = new Date('2026-03-01T12:00:00.000Z');
let unique = 0;
const fresh = (prefix: string) => `${prefix}-${++unique}-${Math.random().toString(36).slice(2, 8)}`;

async function postingCount(store: TestStore): Promise<bigint> {
  const row = await store.db
    .selectFrom('ledger_postings')
    .select((eb) => eb.fn.countAll<bigint>().as('n'))
    .executeTakeFirstOrThrow();
  return BigInt(row.n);
}

async function codeOf(promise: Promise<unknown>): Promise<string | null> {
  try {
    await promise;
    return null;
  } catch (error) {
    if (error instanceof DomainError) return error.code;
    throw error;
  }
}

describe.each(DIALECTS)('ledger on %s', (dialect) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await createTestStore(dialect);
  });
  afterAll(async () => {
    await store.destroy();
  });

  const deposit = (renter: string, amountMicro: bigint, externalRef: string | null = null): TransferInput => ({
    from: ledgerAccounts.external(),
    to: ledgerAccounts.available(renter),
    amountMicro,
    kind: 'deposit',
    reference: `deposit-${renter}`,
    externalRef,
    at,
  });

  it('moves money through reservation, charge and release, keeping every total', async () => {
    const renter = fresh('renter');
    const host = fresh('host');
    const job = fresh('job');
    await runTransfer(store, deposit(renter, 10_000n));
    const reserved = await runTransfer(store, {
      from: ledgerAccounts.available(renter),
      to: ledgerAccounts.hold(job, renter),
      amountMicro: 6_000n,
      kind: 'reservation',
      reference: job,
      at,
    });
    expect(reserved).toMatchObject({ status: 'posted', fromBalanceMicro: 4_000n, toBalanceMicro: 6_000n });
    await inTransactionWithRetry(store, async (trx) => {
      await transfer(trx, {
        from: ledgerAccounts.hold(job, renter),
        to: ledgerAccounts.payable(host),
        amountMicro: 1_000n,
        kind: 'charge_host',
        reference: job,
        at,
      });
      await transfer(trx, {
        from: ledgerAccounts.hold(job, renter),
        to: ledgerAccounts.fees(),
        amountMicro: 100n,
        kind: 'charge_fee',
        reference: job,
        at,
      });
    });
    expect(await balancesOfOwner(store.db, renter)).toEqual({
      availableMicro: 4_000n,
      heldMicro: 4_900n,
      pendingMicro: 0n,
      payableMicro: 0n,
    });
    const released = await runTransfer(store, {
      from: ledgerAccounts.hold(job, renter),
      to: ledgerAccounts.available(renter),
      amountMicro: 4_900n,
      kind: 'release',
      reference: job,
      at,
    });
    expect(released.toBalanceMicro).toBe(8_900n);
    expect(await balanceOf(store.db, ledgerAccounts.payable(host))).toBe(1_000n);
    expect(await balancesOfOwner(store.db, host)).toEqual({ availableMicro: 0n, heldMicro: 0n, pendingMicro: 0n, payableMicro: 1_000n });
    expect(await balancesOfOwner(store.db, renter)).toEqual({ availableMicro: 8_900n, heldMicro: 0n, pendingMicro: 0n, payableMicro: 0n });
    // Postings at the same instant come back in id order, so compare them as a set.
    const postings = await postingsByReference(store.db, job);
    expect(postings.map((p) => `${p.kind}:${p.amountMicro}`).sort()).toEqual([
      'charge_fee:100',
      'charge_host:1000',
      'release:4900',
      'reservation:6000',
    ]);
    expect(await sumOfAllBalances(store.db)).toBe(0n);
    expect((await verifyLedger(store)).ok).toBe(true);
  });

  it("sums a renter's holds across jobs and reports unknown owners as zero", async () => {
    const renter = fresh('renter');
    await runTransfer(store, deposit(renter, 1_000n));
    for (const [i, amount] of [100n, 250n, 50n].entries()) {
      await runTransfer(store, {
        from: ledgerAccounts.available(renter),
        to: ledgerAccounts.hold(`${renter}-job${i}`, renter),
        amountMicro: amount,
        kind: 'reservation',
        reference: 'r',
        at,
      });
    }
    expect(await balancesOfOwner(store.db, renter)).toEqual({ availableMicro: 600n, heldMicro: 400n, pendingMicro: 0n, payableMicro: 0n });
    expect(await balancesOfOwner(store.db, fresh('nobody'))).toEqual({
      availableMicro: 0n,
      heldMicro: 0n,
      pendingMicro: 0n,
      payableMicro: 0n,
    });
    expect(await balanceOf(store.db, ledgerAccounts.available(fresh('nobody')))).toBe(0n);
  });

  it('refuses a debit past the balance with INSUFFICIENT_BALANCE and changes nothing', async () => {
    const renter = fresh('renter');
    const job = fresh('job');
    await runTransfer(store, deposit(renter, 500n));
    const before = await postingCount(store);
    const attempt = runTransfer(store, {
      from: ledgerAccounts.available(renter),
      to: ledgerAccounts.hold(job, renter),
      amountMicro: 501n,
      kind: 'reservation',
      reference: job,
      at,
    });
    expect(await codeOf(attempt)).toBe('INSUFFICIENT_BALANCE');
    expect(await postingCount(store)).toBe(before);
    expect(await balanceOf(store.db, ledgerAccounts.available(renter))).toBe(500n);
    // The hold account was not left behind either: the whole transaction rolled back.
    const hold = await store.db
      .selectFrom('ledger_accounts')
      .select('key')
      .where('key', '=', ledgerAccountKey(job, 'hold'))
      .executeTakeFirst();
    expect(hold).toBeUndefined();
    // A charge past the hold fails the same way, and takes its sibling posting down with it.
    await runTransfer(store, {
      from: ledgerAccounts.available(renter),
      to: ledgerAccounts.hold(job, renter),
      amountMicro: 300n,
      kind: 'reservation',
      reference: job,
      at,
    });
    const host = fresh('host');
    const charge = inTransactionWithRetry(store, async (trx) => {
      await transfer(trx, {
        from: ledgerAccounts.hold(job, renter),
        to: ledgerAccounts.payable(host),
        amountMicro: 250n,
        kind: 'charge_host',
        reference: job,
        at,
      });
      await transfer(trx, {
        from: ledgerAccounts.hold(job, renter),
        to: ledgerAccounts.fees(),
        amountMicro: 51n,
        kind: 'charge_fee',
        reference: job,
        at,
      });
    });
    expect(await codeOf(charge)).toBe('INSUFFICIENT_BALANCE');
    expect(await balanceOf(store.db, ledgerAccounts.hold(job, renter))).toBe(300n);
    expect(await balanceOf(store.db, ledgerAccounts.payable(host))).toBe(0n);
  });

  it('lets the world and adjustment accounts go negative, and nothing else', async () => {
    const renter = fresh('renter');
    const source = fresh('chain');
    await runTransfer(store, { ...deposit(renter, 700n), from: ledgerAccounts.external(source) });
    expect(await balanceOf(store.db, ledgerAccounts.external(source))).toBe(-700n);
    // The database refuses a negative person's balance even if code tried to write one.
    const direct = store.db
      .updateTable('ledger_accounts')
      .set({ balance_micro: -1n })
      .where('key', '=', ledgerAccountKey(renter, 'available'))
      .execute();
    await expect(direct).rejects.toThrow();
    expect(await balanceOf(store.db, ledgerAccounts.available(renter))).toBe(700n);
  });

  it('posts an external reference once: a repeat answers already_posted, other fields conflict', async () => {
    const renter = fresh('renter');
    const ref = `eip155:8453:${fresh('0xtx')}:3`;
    const chain = ledgerAccounts.external(fresh('chain'));
    const first = await runTransfer(store, { ...deposit(renter, 1_234n, ref), from: chain });
    expect(first).toMatchObject({ status: 'posted', fromBalanceMicro: -1_234n, toBalanceMicro: 1_234n });
    // The same accounts, amount and kind are the same posting, whatever the informative reference says.
    const again = await runTransfer(store, { ...deposit(renter, 1_234n, ref), from: chain, reference: 'another-reference' });
    expect(again).toEqual({ status: 'already_posted', postingId: first.postingId, fromBalanceMicro: -1_234n, toBalanceMicro: 1_234n });
    expect(await codeOf(runTransfer(store, { ...deposit(renter, 1_235n, ref), from: chain }))).toBe('LEDGER_REFERENCE_CONFLICT');
    expect(await codeOf(runTransfer(store, { ...deposit(fresh('renter'), 1_234n, ref), from: chain }))).toBe('LEDGER_REFERENCE_CONFLICT');
    expect(await codeOf(runTransfer(store, deposit(renter, 1_234n, ref)))).toBe('LEDGER_REFERENCE_CONFLICT');
    expect(await balanceOf(store.db, ledgerAccounts.available(renter))).toBe(1_234n);
    const posting = await postingByExternalRef(store.db, ref);
    expect(posting).toMatchObject({
      id: first.postingId,
      amountMicro: 1_234n,
      kind: 'deposit',
      externalRef: ref,
      reference: `deposit-${renter}`,
    });
    // A repeat is answered even when the money has since been spent.
    await runTransfer(store, {
      from: ledgerAccounts.available(renter),
      to: ledgerAccounts.external(),
      amountMicro: 1_234n,
      kind: 'withdrawal',
      reference: 'w',
      externalRef: `${ref}:w`,
      at,
    });
    expect(
      (
        await runTransfer(store, {
          from: ledgerAccounts.available(renter),
          to: ledgerAccounts.external(),
          amountMicro: 1_234n,
          kind: 'withdrawal',
          reference: 'w',
          externalRef: `${ref}:w`,
          at,
        })
      ).status,
    ).toBe('already_posted');
    expect(await balanceOf(store.db, ledgerAccounts.available(renter))).toBe(0n);
  });

  it('refuses malformed transfers as programming errors', async () => {
    const renter = fresh('renter');
    const base = deposit(renter, 1n);
    await expect(runTransfer(store, { ...base, amountMicro: 0n })).rejects.toThrow(RangeError);
    await expect(runTransfer(store, { ...base, amountMicro: -5n })).rejects.toThrow(RangeError);
    await expect(runTransfer(store, { ...base, kind: 'reservation' })).rejects.toThrow(/cannot debit a external/);
    await expect(runTransfer(store, { ...base, from: ledgerAccounts.available(renter), kind: 'adjustment' })).rejects.toThrow(
      /same account/,
    );
    await expect(runTransfer(store, { ...base, to: ledgerAccounts.available('bad owner') })).rejects.toThrow(/invalid ledger owner/);
    await expect(runTransfer(store, { ...base, reference: '' })).rejects.toThrow(RangeError);
    // A hold created for one renter cannot be credited as another's.
    const job = fresh('job');
    await runTransfer(store, deposit(renter, 10n));
    await runTransfer(store, {
      from: ledgerAccounts.available(renter),
      to: ledgerAccounts.hold(job, renter),
      amountMicro: 5n,
      kind: 'reservation',
      reference: job,
      at,
    });
    const other = fresh('renter');
    await runTransfer(store, deposit(other, 10n));
    await expect(
      runTransfer(store, {
        from: ledgerAccounts.available(other),
        to: ledgerAccounts.hold(job, other),
        amountMicro: 5n,
        kind: 'extension',
        reference: job,
        at,
      }),
    ).rejects.toThrow(/belongs to/);
  });

  it('keeps postings immutable in the database', async () => {
    const renter = fresh('renter');
    const { postingId } = await runTransfer(store, deposit(renter, 42n));
    await expect(store.db.updateTable('ledger_postings').set({ amount_micro: 43n }).where('id', '=', postingId).execute()).rejects.toThrow(
      /immutable/,
    );
    await expect(store.db.deleteFrom('ledger_postings').where('id', '=', postingId).execute()).rejects.toThrow(/immutable/);
    expect((await postingsByReference(store.db, `deposit-${renter}`))[0]?.amountMicro).toBe(42n);
  });

  it('verifyLedger finds a cached balance that disagrees with the postings', async () => {
    const scratch = await createTestStore(dialect);
    try {
      const renter = fresh('renter');
      await runTransfer(scratch, deposit(renter, 900n));
      // On Postgres the fees' 16 shards exist from the start (migration 0029).
      const accounts = dialect === 'postgres' ? 18n : 2n;
      expect(await verifyLedger(scratch)).toEqual({ ok: true, accounts, postings: 1n, sumMicro: 0n, discrepancies: [] });
      await scratch.db
        .updateTable('ledger_accounts')
        .set({ balance_micro: 901n })
        .where('key', '=', ledgerAccountKey(renter, 'available'))
        .execute();
      const report = await verifyLedger(scratch);
      expect(report.ok).toBe(false);
      expect(report.sumMicro).toBe(1n);
      expect(report.discrepancies).toEqual([
        { key: ledgerAccountKey(renter, 'available'), problem: 'cache_mismatch', cachedMicro: 901n, recomputedMicro: 900n },
      ]);
    } finally {
      await scratch.destroy();
    }
  });

  it('keeps every invariant over random operation sequences (property)', async () => {
    let run = 0;
    // External references come from a small pool, mostly with their usual renter and amount, so
    // repeats (already posted) and conflicting reuses (other renter or amount) both happen.
    const external = <K extends string>(op: K) =>
      fc.nat(5).chain((ref) =>
        fc.record({
          op: fc.constant(op),
          ref: fc.constant(ref),
          renter: fc.oneof({ arbitrary: fc.constant(ref % 3), weight: 4 }, { arbitrary: fc.nat(2), weight: 1 }),
          amount: fc.oneof({ arbitrary: fc.constant(BigInt(ref + 1) * 700n), weight: 4 }, { arbitrary: fc.bigInt(1n, 3_000n), weight: 1 }),
        }),
      );
    const operation = fc.oneof(
      { arbitrary: external('deposit' as const), weight: 3 },
      {
        arbitrary: fc.record({ op: fc.constantFrom('reserve' as const, 'extend' as const), job: fc.nat(3), amount: fc.bigInt(1n, 1_500n) }),
        weight: 3,
      },
      {
        arbitrary: fc.record({
          op: fc.constant('charge' as const),
          job: fc.nat(3),
          host: fc.nat(1),
          hostAmount: fc.bigInt(1n, 600n),
          feeAmount: fc.bigInt(1n, 100n),
        }),
        weight: 3,
      },
      { arbitrary: fc.record({ op: fc.constant('release' as const), job: fc.nat(3), amount: fc.bigInt(1n, 1_000n) }), weight: 1 },
      { arbitrary: external('withdraw' as const), weight: 1 },
      { arbitrary: fc.record({ op: fc.constant('payout' as const), host: fc.nat(1), amount: fc.bigInt(1n, 500n) }), weight: 1 },
    );
    await fc.assert(
      fc.asyncProperty(fc.array(operation, { minLength: 1, maxLength: 40, size: 'max' }), async (ops) => {
        const ns = `p${++run}x${Math.random().toString(36).slice(2, 7)}`;
        const renter = (i: number) => `${ns}-r${i}`;
        const jobOwner = (j: number) => renter(j % 3);
        const world: LedgerAccountRef = { kind: 'external', owner: `${ns}-world`, accountId: null };
        const fees: LedgerAccountRef = { kind: 'fees', owner: `${ns}-fees`, accountId: null };
        const accounts = {
          available: (i: number) => ledgerAccounts.available(renter(i)),
          hold: (j: number) => ledgerAccounts.hold(`${ns}-j${j}`, jobOwner(j)),
          payable: (h: number) => ledgerAccounts.payable(`${ns}-h${h}`),
        };
        // The model: expected balances, and what each external reference was first posted as.
        const model = new Map<string, bigint>();
        const keyOf = (a: LedgerAccountRef) => ledgerAccountKey(a.owner, a.kind);
        const bal = (a: LedgerAccountRef) => model.get(keyOf(a)) ?? 0n;
        const move = (from: LedgerAccountRef, to: LedgerAccountRef, amount: bigint) => {
          model.set(keyOf(from), bal(from) - amount);
          model.set(keyOf(to), bal(to) + amount);
        };
        const refs = new Map<string, string>();
        let expectedPostings = await postingCount(store);

        for (const [i, o] of ops.entries()) {
          const reference = `${ns}-op${i}`;
          let outcome: string;
          let expected: string;
          const attempt = async (work: Promise<unknown>) => (await codeOf(work)) ?? 'ok';
          switch (o.op) {
            case 'deposit':
            case 'withdraw': {
              const externalRef = `${ns}-${o.op}${o.ref}`;
              const [from, to] = o.op === 'deposit' ? [world, accounts.available(o.renter)] : [accounts.available(o.renter), world];
              const kind = o.op === 'deposit' ? ('deposit' as const) : ('withdrawal' as const);
              const signature = `${keyOf(from)}>${keyOf(to)}:${o.amount}:${kind}`;
              const seen = refs.get(externalRef);
              if (seen !== undefined) expected = seen === signature ? 'already' : 'LEDGER_REFERENCE_CONFLICT';
              else if (kind === 'withdrawal' && bal(from) < o.amount) expected = 'INSUFFICIENT_BALANCE';
              else expected = 'ok';
              const result = { status: '' };
              outcome = await attempt(
                runTransfer(store, { from, to, amountMicro: o.amount, kind, reference, externalRef, at }).then((r) =>
                  Object.assign(result, r),
                ),
              );
              if (outcome === 'ok' && result.status === 'already_posted') outcome = 'already';
              if (expected === 'ok') {
                refs.set(externalRef, signature);
                move(from, to, o.amount);
                expectedPostings += 1n;
              }
              break;
            }
            case 'reserve':
            case 'extend': {
              const from = accounts.available(o.job % 3);
              const to = accounts.hold(o.job);
              expected = bal(from) >= o.amount ? 'ok' : 'INSUFFICIENT_BALANCE';
              outcome = await attempt(
                runTransfer(store, {
                  from,
                  to,
                  amountMicro: o.amount,
                  kind: o.op === 'reserve' ? 'reservation' : 'extension',
                  reference,
                  at,
                }),
              );
              if (expected === 'ok') {
                move(from, to, o.amount);
                expectedPostings += 1n;
              }
              break;
            }
            case 'charge': {
              const hold = accounts.hold(o.job);
              expected = bal(hold) >= o.hostAmount + o.feeAmount ? 'ok' : 'INSUFFICIENT_BALANCE';
              outcome = await attempt(
                inTransactionWithRetry(store, async (trx) => {
                  await transfer(trx, {
                    from: hold,
                    to: accounts.payable(o.host),
                    amountMicro: o.hostAmount,
                    kind: 'charge_host',
                    reference,
                    at,
                  });
                  await transfer(trx, { from: hold, to: fees, amountMicro: o.feeAmount, kind: 'charge_fee', reference, at });
                }),
              );
              if (expected === 'ok') {
                move(hold, accounts.payable(o.host), o.hostAmount);
                move(hold, fees, o.feeAmount);
                expectedPostings += 2n;
              }
              break;
            }
            case 'release': {
              const from = accounts.hold(o.job);
              const to = accounts.available(o.job % 3);
              expected = bal(from) >= o.amount ? 'ok' : 'INSUFFICIENT_BALANCE';
              outcome = await attempt(runTransfer(store, { from, to, amountMicro: o.amount, kind: 'release', reference, at }));
              if (expected === 'ok') {
                move(from, to, o.amount);
                expectedPostings += 1n;
              }
              break;
            }
            case 'payout': {
              const from = accounts.payable(o.host);
              expected = bal(from) >= o.amount ? 'ok' : 'INSUFFICIENT_BALANCE';
              outcome = await attempt(runTransfer(store, { from, to: world, amountMicro: o.amount, kind: 'payout', reference, at }));
              if (expected === 'ok') {
                move(from, world, o.amount);
                expectedPostings += 1n;
              }
              break;
            }
          }
          expect(outcome, `op ${i} ${JSON.stringify(o, (_k, v) => (typeof v === 'bigint' ? `${v}` : v))}`).toBe(expected);
          // A failed or repeated transfer changed nothing: the posting count moves only with the model.
          expect(await postingCount(store)).toBe(expectedPostings);
        }

        // Cached balances equal the model, none of a person's or job's is negative, and the books balance.
        const keys = [...model.keys()];
        const rows = keys.length
          ? await store.db.selectFrom('ledger_accounts').select(['key', 'kind', 'balance_micro']).where('key', 'in', keys).execute()
          : [];
        const actual = new Map(rows.map((r) => [r.key, r.balance_micro]));
        for (const [key, value] of model) expect(actual.get(key) ?? 0n, key).toBe(value);
        for (const row of rows) if (row.kind !== 'external') expect(row.balance_micro >= 0n, row.key).toBe(true);
        expect([...model.values()].reduce((a, b) => a + b, 0n)).toBe(0n);
        expect(await sumOfAllBalances(store.db)).toBe(0n);
        // Each external reference was posted exactly once.
        for (const ref of refs.keys()) {
          const n = await store.db
            .selectFrom('ledger_postings')
            .select((eb) => eb.fn.countAll<bigint>().as('n'))
            .where('external_ref', '=', ref)
            .executeTakeFirstOrThrow();
          expect(BigInt(n.n), ref).toBe(1n);
        }
        const verification = await verifyLedger(store);
        expect(verification.discrepancies).toEqual([]);
        expect(verification.ok).toBe(true);
      }),
      { numRuns: 30 },
    );
  });

  describe.runIf(dialect === 'postgres')('under concurrency', () => {
    it('lets exactly as many concurrent reservations through as the balances allow', async () => {
      const renters = Array.from({ length: 4 }, () => fresh('renter'));
      for (const r of renters) await runTransfer(store, deposit(r, 10_000n));
      const before = await postingCount(store);
      // 200 reservations of 300 each: 10_000 / 300 leaves exactly 33 per renter.
      const results = await Promise.all(
        Array.from({ length: 200 }, (_, i) => {
          const renter = renters[i % renters.length] as string;
          const job = fresh('job');
          return codeOf(
            runTransfer(store, {
              from: ledgerAccounts.available(renter),
              to: ledgerAccounts.hold(job, renter),
              amountMicro: 300n,
              kind: 'reservation',
              reference: job,
              at,
            }),
          );
        }),
      );
      expect(results.filter((r) => r === null)).toHaveLength(4 * 33);
      expect(results.filter((r) => r !== null).every((r) => r === 'INSUFFICIENT_BALANCE')).toBe(true);
      expect(await postingCount(store)).toBe(before + 132n);
      for (const r of renters)
        expect(await balancesOfOwner(store.db, r)).toEqual({ availableMicro: 100n, heldMicro: 9_900n, pendingMicro: 0n, payableMicro: 0n });
      expect(await sumOfAllBalances(store.db)).toBe(0n);
      expect((await verifyLedger(store)).ok).toBe(true);
    });

    it('keeps the invariants under a concurrent mix of random transfers', async () => {
      const renters = Array.from({ length: 3 }, () => fresh('renter'));
      const jobs = renters.flatMap((r) => [0, 1].map(() => ({ id: fresh('job'), renter: r })));
      const hosts = [fresh('host'), fresh('host')];
      for (const r of renters) await runTransfer(store, deposit(r, 5_000n));
      for (const j of jobs) {
        await runTransfer(store, {
          from: ledgerAccounts.available(j.renter),
          to: ledgerAccounts.hold(j.id, j.renter),
          amountMicro: 1_000n,
          kind: 'reservation',
          reference: j.id,
          at,
        });
      }
      const amounts = fc.sample(fc.tuple(fc.nat(5), fc.nat(3), fc.bigInt(1n, 700n)), { numRuns: 200, seed: 7 });
      const outcomes = await Promise.all(
        amounts.map(([j, op, amount]) => {
          const job = jobs[j] as { id: string; renter: string };
          const hold = ledgerAccounts.hold(job.id, job.renter);
          const available = ledgerAccounts.available(job.renter);
          const input: TransferInput =
            op === 0
              ? { from: available, to: hold, amountMicro: amount, kind: 'extension', reference: job.id, at }
              : op === 1
                ? {
                    from: hold,
                    to: ledgerAccounts.payable(hosts[j % 2] as string),
                    amountMicro: amount,
                    kind: 'charge_host',
                    reference: job.id,
                    at,
                  }
                : op === 2
                  ? { from: hold, to: available, amountMicro: amount, kind: 'release', reference: job.id, at }
                  : { from: available, to: ledgerAccounts.external(), amountMicro: amount, kind: 'withdrawal', reference: job.id, at };
          return codeOf(runTransfer(store, input));
        }),
      );
      expect(outcomes.every((o) => o === null || o === 'INSUFFICIENT_BALANCE')).toBe(true);
      expect(outcomes.some((o) => o === 'INSUFFICIENT_BALANCE')).toBe(true);
      expect(outcomes.some((o) => o === null)).toBe(true);
      const negatives = await store.db
        .selectFrom('ledger_accounts')
        .select('key')
        .where('balance_micro', '<', 0n)
        .where('kind', 'not in', ['external', 'adjustment'])
        .execute();
      expect(negatives).toEqual([]);
      expect(await sumOfAllBalances(store.db)).toBe(0n);
      expect((await verifyLedger(store)).ok).toBe(true);
    });

    it('posts one of twenty concurrent credits with the same external reference', async () => {
      const renter = fresh('renter');
      const ref = `eip155:8453:${fresh('0xsame')}:0`;
      const results = await Promise.all(Array.from({ length: 20 }, () => runTransfer(store, deposit(renter, 777n, ref))));
      expect(results.filter((r) => r.status === 'posted')).toHaveLength(1);
      expect(results.filter((r) => r.status === 'already_posted')).toHaveLength(19);
      expect(new Set(results.map((r) => r.postingId)).size).toBe(1);
      expect(await balanceOf(store.db, ledgerAccounts.available(renter))).toBe(777n);

      // Racing the same reference onto different accounts: one wins, the rest conflict.
      const contested = `eip155:8453:${fresh('0xrace')}:1`;
      const raced = await Promise.all(
        Array.from({ length: 20 }, () => codeOf(runTransfer(store, deposit(fresh('renter'), 5n, contested)))),
      );
      expect(raced.filter((r) => r === null)).toHaveLength(1);
      expect(raced.filter((r) => r === 'LEDGER_REFERENCE_CONFLICT')).toHaveLength(19);
      expect((await verifyLedger(store)).ok).toBe(true);
    });
  });
});
