import { randomInt, randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { FEE_SHARDS, feeShardOf, type LedgerAccountRef, ledgerAccountKey, ledgerAccounts } from '../domain/ledger/accounts.js';
import { type PostingKind, transferProblem } from '../domain/ledger/postings.js';
import { bothDialects, rowsStatement, runSql } from './compiled.js';
import { dialectOf, isPostgres, type Tx } from './db.js';
import type { PendingEarningsTable } from './tables/earnings.js';
import type { LedgerPostingsTable } from './tables/ledger.js';
import { insertPendingLot } from './pending-earnings.js';

// A metered charge posts two legs from the job's hold: the host share to the host's pending earnings (a lot that
// matures at `maturesAt`, store/pending-earnings.ts; straight to payable when maturity is off) and the fee to the
// platform's fees. It is the hot path of metering, so both legs go in one statement each (one balance update for
// the three accounts, one insert for the two postings) instead of two ledger transfers of three statements each.
// It writes the ledger's own tables under the ledger's rules: the same posting kinds (POSTING_RULES), immutable
// postings, cached balances moved relatively in the same transaction, the hold never below zero (the domain never
// charges past the funded budget, and the table's check constraint refuses it anyway).

export interface ChargeLegs {
  jobId: string;
  renterAccountId: string;
  hostAccountId: string;
  hostMicro: bigint;
  feeMicro: bigint;
  /** The job's first charge: create the host's and the fees accounts if this is their first use. */
  first: boolean;
  at: Date;
  /** When the host share becomes payable (issue 24 item 4); null: maturity is off, it is payable at once. */
  maturesAt: Date | null;
}

const feesOfTransaction = new WeakMap<Tx, LedgerAccountRef>();

/**
 * The fees account this transaction's charges credit. On Postgres, one of the FEE_SHARDS accounts, drawn once per
 * transaction: replicas' charging transactions run at once and would otherwise all queue on one row's lock (each
 * holds it to its commit); one shard a transaction keeps a group to one fees row. The shards exist from the start
 * (migration 0029). SQLite has one writer: shard 0.
 */
export function feesAccountOf(trx: Tx): LedgerAccountRef {
  if (!isPostgres(trx)) return ledgerAccounts.fees();
  let fees = feesOfTransaction.get(trx);
  if (!fees) {
    fees = ledgerAccounts.fees(randomInt(FEE_SHARDS));
    feesOfTransaction.set(trx, fees);
  }
  return fees;
}

/** Locks ledger accounts in key order (Postgres), the one order of every ledger write; answers how many exist. */
async function lockKeysInOrder(trx: Tx, keys: readonly string[]): Promise<number> {
  const rows = await trx
    .selectFrom('ledger_accounts')
    .select('key')
    .where('key', 'in', [...keys])
    .orderBy('key')
    .forNoKeyUpdate()
    .execute();
  return rows.length;
}

/**
 * Locks every fees account (key order) and answers where `amountMicro` leaving the fees comes from: shard 0 first,
 * then the others, each giving at most its balance. A job's credit gives back fees its charges put into whichever
 * shards their transactions drew, so it takes from the fees as a whole. It cannot fall short (the fees hold at least
 * what this job's charges paid in, and a job is credited once); if it ever did, it throws and nothing moves.
 */
export async function takeFromFees(trx: Tx, amountMicro: bigint): Promise<Array<{ from: LedgerAccountRef; amountMicro: bigint }>> {
  if (amountMicro <= 0n) return [];
  let query = trx.selectFrom('ledger_accounts').select(['owner_id', 'balance_micro']).where('kind', '=', 'fees').orderBy('key');
  if (isPostgres(trx)) query = query.forNoKeyUpdate();
  const rows = await query.execute();
  const shards = rows
    .map((row) => ({ shard: feeShardOf(row.owner_id), balance: BigInt(row.balance_micro) }))
    .filter((row): row is { shard: number; balance: bigint } => row.shard !== null)
    .sort((a, b) => a.shard - b.shard);
  const takes: Array<{ from: LedgerAccountRef; amountMicro: bigint }> = [];
  let left = amountMicro;
  for (const { shard, balance } of shards) {
    if (left === 0n) break;
    let take = left;
    if (balance < take) take = balance;
    if (take <= 0n) continue;
    takes.push({ from: ledgerAccounts.fees(shard), amountMicro: take });
    left -= take;
  }
  if (left > 0n) throw new Error(`fees hold ${amountMicro - left} of the ${amountMicro} micro-USDC to give back`);
  return takes;
}

async function ensureAccounts(trx: Tx, refs: LedgerAccountRef[], at: string): Promise<void> {
  await trx
    .insertInto('ledger_accounts')
    .values(
      refs.map((ref) => ({
        key: ledgerAccountKey(ref.owner, ref.kind),
        owner_id: ref.owner,
        kind: ref.kind,
        account_id: ref.accountId,
        balance_micro: 0n,
        updated_at: at,
      })),
    )
    .onConflict((oc) => oc.column('key').doNothing())
    .execute();
}

/** Posts hold -> pending (host share, with its lot) and hold -> fees (fee share) inside the caller's transaction. */
export async function postMeteredCharge(trx: Tx, legs: ChargeLegs): Promise<void> {
  const hold = ledgerAccounts.hold(legs.jobId, legs.renterAccountId);
  const payable = legs.maturesAt === null ? ledgerAccounts.payable(legs.hostAccountId) : ledgerAccounts.pending(legs.hostAccountId);
  const fees = feesAccountOf(trx);
  const wanted: Array<{ to: LedgerAccountRef; amountMicro: bigint; kind: PostingKind }> = [];
  if (legs.hostMicro > 0n) wanted.push({ to: payable, amountMicro: legs.hostMicro, kind: 'charge_host' });
  if (legs.feeMicro > 0n) wanted.push({ to: fees, amountMicro: legs.feeMicro, kind: 'charge_fee' });
  if (wanted.length === 0) return;
  for (const leg of wanted) {
    const problem = transferProblem({ from: hold, to: leg.to, amountMicro: leg.amountMicro, kind: leg.kind, reference: legs.jobId });
    if (problem) throw new RangeError(`invalid metered charge: ${problem}`);
  }
  const at = legs.at.toISOString();
  if (legs.first) await ensureAccounts(trx, [payable, fees], at);
  const holdKey = ledgerAccountKey(hold.owner, hold.kind);
  const payableKey = ledgerAccountKey(payable.owner, payable.kind);
  const feesKey = ledgerAccountKey(fees.owner, fees.kind);
  const total = legs.hostMicro + legs.feeMicro;
  // Balances first, their rows locked in key order as every ledger transfer locks them (an update's own scan order
  // is the table's, not the key's: with both orders in use, two replicas' charges deadlocked).
  const keys = [holdKey, ...wanted.map((leg) => ledgerAccountKey(leg.to.owner, leg.to.kind))];
  if (isPostgres(trx)) await lockKeysInOrder(trx, keys);
  const dialect = dialectOf(trx);
  const updated = await runSql(trx, (keys.length === 3 ? MOVE_THREE : MOVE_TWO)(dialect), [
    payableKey,
    legs.hostMicro,
    feesKey,
    legs.feeMicro,
    -total,
    at,
    ...keys,
  ]);
  if (Number(updated.numAffectedRows ?? 0n) !== keys.length) {
    throw new Error(`metered charge for job ${legs.jobId}: ledger accounts missing (${keys.join(', ')})`);
  }
  const postings: unknown[] = [];
  for (const leg of wanted) {
    postings.push(randomUUID(), at, holdKey, ledgerAccountKey(leg.to.owner, leg.to.kind), leg.amountMicro, leg.kind, legs.jobId, null);
  }
  await runSql(trx, insertPostingsSql(dialect, wanted.length), postings);
  if (legs.maturesAt !== null && legs.hostMicro > 0n) {
    await insertPendingLot(trx, {
      hostAccountId: legs.hostAccountId,
      jobId: legs.jobId,
      amountMicro: legs.hostMicro,
      chargedAt: legs.at,
      maturesAt: legs.maturesAt,
    });
  }
}

// The statements of one charge (every meter receipt), as SQL text rather than built per receipt (store/compiled.ts):
// the balances of the hold and the one or two accounts credited, moved in one update, and the postings.
const moveBalances = (keys: number) =>
  bothDialects(`update ledger_accounts
    set balance_micro = balance_micro + (case key when ? then cast(? as bigint) when ? then cast(? as bigint) else cast(? as bigint) end),
        updated_at = ?
    where key in (${Array.from({ length: keys }, () => '?').join(', ')})`);
const MOVE_TWO = moveBalances(2);
const MOVE_THREE = moveBalances(3);
const insertPostingsSql = rowsStatement(
  8,
  (_dialect, values) =>
    `insert into ledger_postings (id, at, from_key, to_key, amount_micro, kind, reference, external_ref) values ${values}`,
);

/**
 * Posts the metered charges of several jobs in one transaction with one statement each, whatever their number (the
 * gateway's group of receipts on Postgres, services/jobs/metering-batch.ts): the accounts are locked in key order
 * (every ledger transfer's order), their balances moved by the summed deltas, the postings and the lots inserted.
 * Each job's accounts must exist already (not its first charge: postMeteredCharge creates them). Postgres only.
 */
export async function postMeteredCharges(trx: Tx, charges: readonly ChargeLegs[]): Promise<void> {
  const deltas = new Map<string, bigint>();
  const move = (key: string, amount: bigint) => deltas.set(key, (deltas.get(key) ?? 0n) + amount);
  const fees = feesAccountOf(trx);
  const postings: LedgerPostingsTable[] = [];
  const lots: PendingEarningsTable[] = [];
  for (const legs of charges) {
    if (legs.first) throw new Error(`metered charge for job ${legs.jobId}: a first charge goes through postMeteredCharge`);
    const hold = ledgerAccounts.hold(legs.jobId, legs.renterAccountId);
    const payable = legs.maturesAt === null ? ledgerAccounts.payable(legs.hostAccountId) : ledgerAccounts.pending(legs.hostAccountId);
    const at = legs.at.toISOString();
    const holdKey = ledgerAccountKey(hold.owner, hold.kind);
    for (const leg of [
      { to: payable, amountMicro: legs.hostMicro, kind: 'charge_host' as const },
      { to: fees, amountMicro: legs.feeMicro, kind: 'charge_fee' as const },
    ]) {
      if (leg.amountMicro <= 0n) continue;
      const problem = transferProblem({ from: hold, to: leg.to, amountMicro: leg.amountMicro, kind: leg.kind, reference: legs.jobId });
      if (problem) throw new RangeError(`invalid metered charge: ${problem}`);
      const toKey = ledgerAccountKey(leg.to.owner, leg.to.kind);
      move(holdKey, -leg.amountMicro);
      move(toKey, leg.amountMicro);
      postings.push({
        id: randomUUID(),
        at,
        from_key: holdKey,
        to_key: toKey,
        amount_micro: leg.amountMicro,
        kind: leg.kind,
        reference: legs.jobId,
        external_ref: null,
      });
    }
    if (legs.maturesAt !== null && legs.hostMicro > 0n) {
      lots.push({
        id: randomUUID(),
        host_account_id: legs.hostAccountId,
        job_id: legs.jobId,
        amount_micro: legs.hostMicro,
        remaining_micro: legs.hostMicro,
        charged_at: at,
        matures_at: legs.maturesAt.toISOString(),
        matured_at: null,
      });
    }
  }
  if (postings.length === 0) return;
  const keys = [...deltas.keys()].sort();
  const at = (charges[0] as ChargeLegs).at.toISOString();
  // The postings and lots first, the balances last: the fees account (and a busy host's) is in every group of every
  // replica, so its row is locked as late as possible, for one update and the commit. The postings' foreign keys take
  // key-share locks, which every ledger lock lets through (no-key locks, ledger.ts and here), so this order cannot
  // deadlock with a transfer.
  await trx.insertInto('ledger_postings').values(postings).execute();
  if (lots.length > 0) await trx.insertInto('pending_earnings').values(lots).execute();
  const locked = await lockKeysInOrder(trx, keys);
  if (locked !== keys.length) throw new Error(`metered charges: ledger accounts missing (${keys.length - locked} of ${keys.length})`);
  const values = keys.map((key) => sql`(${key}, cast(${deltas.get(key) as bigint} as bigint))`);
  await sql`update ledger_accounts as a set balance_micro = a.balance_micro + v.delta, updated_at = ${at}
    from (values ${sql.join(values)}) as v(key, delta) where a.key = v.key`.execute(trx);
}
