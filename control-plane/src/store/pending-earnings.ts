import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { ledgerAccounts } from '../domain/ledger/accounts.js';
import { compiledOnce } from './compiled.js';
import { type Executor, isPostgres, type Store, type Tx } from './db.js';
import { transfer } from './ledger.js';
import { inTransactionWithRetry } from './transaction.js';

// Pending earnings (issue 24 item 4): each host charge posted to `pending:<host>` is a lot in pending_earnings that
// becomes payable at its own maturity. The host's pending balance equals the sum of `remaining_micro` over its
// unmatured lots: metering adds a lot with its charge, a credit takes from lots with its debit, maturity zeroes lots
// with its transfer, each in the one transaction that moves the money (verifyLedger checks the equality).

export interface NewPendingLot {
  hostAccountId: string;
  jobId: string;
  amountMicro: bigint;
  chargedAt: Date;
  maturesAt: Date;
}

/** Records a charge's pending lot, in the transaction that posts the charge to the host's pending account. */
export async function insertPendingLot(trx: Tx, lot: NewPendingLot): Promise<void> {
  await insertLot(
    trx,
    randomUUID(),
    lot.hostAccountId,
    lot.jobId,
    lot.amountMicro,
    lot.chargedAt.toISOString(),
    lot.maturesAt.toISOString(),
  );
}

// Once per meter receipt with a host share: compiled once (store/compiled.ts).
const insertLot = compiledOnce(
  (db, id: string, hostAccountId: string, jobId: string, amountMicro: bigint, chargedAt: string, maturesAt: string) =>
    db.insertInto('pending_earnings').values({
      id,
      host_account_id: hostAccountId,
      job_id: jobId,
      amount_micro: amountMicro,
      remaining_micro: amountMicro,
      charged_at: chargedAt,
      matures_at: maturesAt,
      matured_at: null,
    }),
);

export interface OpenLot {
  id: string;
  remainingMicro: bigint;
  maturesAt: Date;
}

/** A host's unmatured lots with something left, locked on Postgres (a credit takes from them). Bounded by `limit`. */
export async function lockOpenLots(trx: Tx, hostAccountId: string, limit = 10_000): Promise<OpenLot[]> {
  let query = trx
    .selectFrom('pending_earnings')
    .select(['id', 'remaining_micro', 'matures_at'])
    .where('host_account_id', '=', hostAccountId)
    .where('matured_at', 'is', null)
    .where('remaining_micro', '>', 0n)
    .orderBy('matures_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit);
  if (isPostgres(trx)) query = query.forUpdate();
  const rows = await query.execute();
  return rows.map((r) => ({ id: r.id, remainingMicro: BigInt(r.remaining_micro), maturesAt: new Date(r.matures_at) }));
}

/** Writes what a credit left of one lot (the caller debits the pending account by the same total). */
export async function setLotRemaining(trx: Tx, lotId: string, remainingMicro: bigint): Promise<void> {
  await trx.updateTable('pending_earnings').set({ remaining_micro: remainingMicro }).where('id', '=', lotId).execute();
}

/**
 * Moves the due lots of up to `hostLimit` hosts to payable, one transaction per host: the lots are read (locked on
 * Postgres, where a replica running the same step waits and then sees them matured), zeroed and marked matured by a
 * compare-and-set on `matured_at is null`, and their remaining sum goes pending -> payable in the same transaction.
 * Answers how many lots matured.
 */
export async function matureDueLots(store: Store, now: Date, hostLimit = 200): Promise<number> {
  const at = now.toISOString();
  const hosts = await store.db
    .selectFrom('pending_earnings')
    .select('host_account_id')
    .distinct()
    .where('matured_at', 'is', null)
    .where('matures_at', '<=', at)
    .limit(hostLimit)
    .execute();
  let matured = 0;
  for (const { host_account_id: hostAccountId } of hosts) {
    matured += await inTransactionWithRetry(store, async (trx) => {
      let due = trx
        .selectFrom('pending_earnings')
        .select(['id', 'remaining_micro'])
        .where('host_account_id', '=', hostAccountId)
        .where('matured_at', 'is', null)
        .where('matures_at', '<=', at)
        .orderBy('id')
        .limit(10_000);
      if (isPostgres(trx)) due = due.forUpdate();
      const lots = await due.execute();
      if (lots.length === 0) return 0;
      const ids = lots.map((lot) => lot.id);
      const updated = await trx
        .updateTable('pending_earnings')
        .set({ matured_at: at, remaining_micro: 0n })
        .where('id', 'in', ids)
        .where('matured_at', 'is', null)
        .executeTakeFirst();
      if (Number(updated.numUpdatedRows) !== ids.length) throw new Error(`pending lots of ${hostAccountId} matured twice`);
      const maturedMicro = lots.reduce((sum, lot) => sum + BigInt(lot.remaining_micro), 0n);
      if (maturedMicro > 0n) {
        await transfer(trx, {
          from: ledgerAccounts.pending(hostAccountId),
          to: ledgerAccounts.payable(hostAccountId),
          amountMicro: maturedMicro,
          kind: 'earnings_matured',
          reference: hostAccountId,
          at: now,
        });
      }
      return ids.length;
    });
  }
  return matured;
}

export interface PendingSummary {
  pendingMicro: bigint;
  /** When the next lot becomes payable; null when nothing is pending. */
  nextMaturesAt: Date | null;
}

/** A host's pending earnings and when the next of them matures (the earnings view). */
export async function pendingSummaryOf(db: Executor, hostAccountId: string): Promise<PendingSummary> {
  const [balance, next] = await Promise.all([
    db.selectFrom('ledger_accounts').select('balance_micro').where('key', '=', `pending:${hostAccountId}`).executeTakeFirst(),
    db
      .selectFrom('pending_earnings')
      .select((eb) => eb.fn.min<string | null>('matures_at').as('next'))
      .where('host_account_id', '=', hostAccountId)
      .where('matured_at', 'is', null)
      .where('remaining_micro', '>', 0n)
      .executeTakeFirst(),
  ]);
  return { pendingMicro: BigInt(balance?.balance_micro ?? 0n), nextMaturesAt: next?.next ? new Date(next.next) : null };
}

export interface PendingMismatch {
  key: string;
  cachedMicro: bigint;
  lotsMicro: bigint;
}

/** Hosts whose pending balance is not the sum of their open lots (ledger verification); at most `limit`. */
export async function pendingLotMismatches(db: Executor, limit: number): Promise<PendingMismatch[]> {
  const rows = await sql<{ key: string; cached: bigint; lots: bigint }>`
    select a.key as key, a.balance_micro as cached, coalesce(l.total, 0) as lots
    from ledger_accounts a
    left join (select host_account_id as h, sum(remaining_micro) as total from pending_earnings
               where matured_at is null group by host_account_id) l on l.h = a.owner_id
    where a.kind = 'pending' and a.balance_micro <> coalesce(l.total, 0)
    order by a.key
    limit ${limit}`.execute(db);
  return rows.rows.map((r) => ({ key: r.key, cachedMicro: BigInt(r.cached), lotsMicro: BigInt(r.lots) }));
}
