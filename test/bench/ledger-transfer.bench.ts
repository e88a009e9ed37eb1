// Raw store throughput of ledger transfers on SQLite (synchronous=FULL, as money runs), no HTTP.
// Run: pnpm exec tsx test/bench/ledger-transfer.bench.ts   (or import { run } from a bench runner)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ledgerAccounts } from '@ark/control-plane/domain/ledger/accounts';
import { openStore } from '@ark/control-plane/store/db';
import { runTransfer, verifyLedger } from '@ark/control-plane/store/ledger';
import { migrateToLatest } from '@ark/control-plane/store/migrate';

export interface LedgerTransferFigures {
  synchronous: 'FULL' | 'NORMAL';
  /** Transfers between existing accounts, each in its own transaction (reservation then release). */
  transfers: number;
  transfersPerSecond: number;
  /** Deposits with a unique external reference each (the idempotent path). */
  idempotentTransfers: number;
  idempotentTransfersPerSecond: number;
  /** Repeats of already-posted external references (answered, not posted). */
  repeatsPerSecond: number;
}

export interface LedgerBenchOptions {
  /** Transfers per phase (default 3000). */
  count?: number;
  synchronous?: 'FULL' | 'NORMAL';
}

/** Measures the raw transfer loop; returns the figures (the bench runner compares them with HTTP later). */
export async function run(options: LedgerBenchOptions = {}): Promise<LedgerTransferFigures> {
  const count = Math.max(100, Math.min(options.count ?? 3000, 1_000_000));
  const synchronous = options.synchronous ?? 'FULL';
  const dir = mkdtempSync(join(tmpdir(), 'ark-bench-ledger-'));
  const store = openStore({ databaseUrl: null, sqlitePath: join(dir, 'ark.sqlite'), sqliteSynchronous: synchronous });
  try {
    await migrateToLatest(store);
    const at = new Date();
    const renters = Array.from({ length: 8 }, (_, i) => `bench-renter-${i}`);
    for (const renter of renters) {
      await runTransfer(store, {
        from: ledgerAccounts.external(),
        to: ledgerAccounts.available(renter),
        amountMicro: 1_000_000_000n,
        kind: 'deposit',
        reference: 'seed',
        at,
      });
      await runTransfer(store, {
        from: ledgerAccounts.available(renter),
        to: ledgerAccounts.hold(`${renter}-job`, renter),
        amountMicro: 1n,
        kind: 'reservation',
        reference: 'seed',
        at,
      });
    }

    // Plain transfers between existing accounts: the common path (lock, check, insert, two updates).
    let started = process.hrtime.bigint();
    for (let i = 0; i < count; i++) {
      // Pairs: reserve then release on the same renter, so no balance runs dry.
      const renter = renters[Math.floor(i / 2) % renters.length] as string;
      const available = ledgerAccounts.available(renter);
      const hold = ledgerAccounts.hold(`${renter}-job`, renter);
      const [from, to, kind] = i % 2 === 0 ? [available, hold, 'reservation' as const] : [hold, available, 'release' as const];
      await runTransfer(store, { from, to, amountMicro: 1_000n, kind, reference: `${renter}-job`, at });
    }
    const plainSeconds = Number(process.hrtime.bigint() - started) / 1e9;

    // Idempotent deposits: each with a fresh external reference.
    started = process.hrtime.bigint();
    for (let i = 0; i < count; i++) {
      const renter = renters[i % renters.length] as string;
      await runTransfer(store, {
        from: ledgerAccounts.external(),
        to: ledgerAccounts.available(renter),
        amountMicro: 1_000n,
        kind: 'deposit',
        reference: 'bench',
        externalRef: `bench:${i}`,
        at,
      });
    }
    const idempotentSeconds = Number(process.hrtime.bigint() - started) / 1e9;

    // Repeats of the same references: answered from the unique index, nothing posted.
    const repeats = Math.min(count, 1000);
    started = process.hrtime.bigint();
    for (let i = 0; i < repeats; i++) {
      const renter = renters[i % renters.length] as string;
      const result = await runTransfer(store, {
        from: ledgerAccounts.external(),
        to: ledgerAccounts.available(renter),
        amountMicro: 1_000n,
        kind: 'deposit',
        reference: 'bench',
        externalRef: `bench:${i}`,
        at,
      });
      if (result.status !== 'already_posted') throw new Error('a repeated external reference posted twice');
    }
    const repeatSeconds = Number(process.hrtime.bigint() - started) / 1e9;

    const verification = await verifyLedger(store);
    if (!verification.ok)
      throw new Error(
        `ledger does not verify after the bench: ${JSON.stringify(verification.discrepancies.slice(0, 3), (_k, v) => (typeof v === 'bigint' ? `${v}` : v))}`,
      );
    return {
      synchronous,
      transfers: count,
      transfersPerSecond: Math.round(count / plainSeconds),
      idempotentTransfers: count,
      idempotentTransfersPerSecond: Math.round(count / idempotentSeconds),
      repeatsPerSecond: Math.round(repeats / repeatSeconds),
    };
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const full = await run({ synchronous: 'FULL' });
  const normal = await run({ synchronous: 'NORMAL' });
  process.stdout.write(`${JSON.stringify({ full, normal }, null, 2)}\n`);
}
