import { type Selectable, sql } from 'kysely';
import { ledgerAccountKey } from '../domain/ledger/accounts.js';
import type { PaidKind, WithdrawalKind, WithdrawalState } from '../domain/withdrawals/states.js';
import { assertWithdrawalMove, assertWithdrawalStart, OPEN_STATES, WITHDRAWAL_KINDS } from '../domain/withdrawals/states.js';
import { type Executor, isPostgres, type Tx } from './db.js';
import { takeLease } from './leases.js';
import { type KeysetPosition, keysetPage } from './keyset.js';
import type { WithdrawalsTable, WithdrawalTransactionsTable } from './tables/withdrawals.js';

// Withdrawal and payout requests, their signed transactions, and the payout wallet's nonce and lease per network.
// Both dialects; rows a transaction changes are locked FOR UPDATE on Postgres (SQLite serialises writers).
// Deposit refunds share the table and the payer, never an account's reads or the review: those see requests only.
// A request's state is written here only: insertWithdrawal (INTENT) and moveWithdrawal, which checks each move against
// the kind's table (WITHDRAWAL_MOVES, domain/withdrawals/states.ts) and compares-and-sets on the state it leaves.

/** Anything the payer pays: an account's request or a deposit refund. */
export type PaidRow = Selectable<WithdrawalsTable>;
/** An account's own request: a withdrawal or a payout. */
export type WithdrawalRow = PaidRow & { kind: WithdrawalKind };

/** The payer's columns of a request not yet signed: a new withdrawal, payout or refund starts with these. */
export const NOT_YET_PAID = {
  payer_address: null,
  nonce: null,
  raw_tx: null,
  tx_hash: null,
  max_fee_per_gas: null,
  max_priority_fee_per_gas: null,
  signed_at: null,
  broadcast_at: null,
  block_number: null,
  fee_wei: null,
  confirmed_at: null,
  failure_reason: null,
} as const;
export type WithdrawalTransactionRow = Selectable<WithdrawalTransactionsTable>;

/** Stores a new request; it starts as INTENT (ForbiddenStateMove otherwise, and nothing is written). */
export async function insertWithdrawal(trx: Tx, row: PaidRow): Promise<void> {
  assertWithdrawalStart(row.kind, row.state);
  await trx.insertInto('withdrawals').values(row).execute();
}

/** An account's request (a refund is not one). */
export async function findWithdrawal(db: Executor, id: string): Promise<WithdrawalRow | undefined> {
  return (await db
    .selectFrom('withdrawals')
    .selectAll()
    .where('id', '=', id)
    .where('kind', 'in', [...WITHDRAWAL_KINDS])
    .executeTakeFirst()) as WithdrawalRow | undefined;
}

/** An account's request, locked for the rest of the transaction (a refund is not one: review never sees it). */
export async function lockWithdrawal(trx: Tx, id: string): Promise<WithdrawalRow | undefined> {
  const row = await lockPaidRequest(trx, id);
  return row && row.kind !== 'refund' ? (row as WithdrawalRow) : undefined;
}

/** Any request the payer pays, refunds included. */
export async function findPaidRequest(db: Executor, id: string | null): Promise<PaidRow | undefined> {
  if (id === null) return undefined;
  return db.selectFrom('withdrawals').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Any request the payer pays, refunds included, locked for the rest of the transaction. */
export async function lockPaidRequest(trx: Tx, id: string): Promise<PaidRow | undefined> {
  let query = trx.selectFrom('withdrawals').selectAll().where('id', '=', id);
  if (isPostgres(trx)) query = query.forUpdate();
  return query.executeTakeFirst();
}

/** The columns a move may write besides the state. */
export type WithdrawalPatch = Partial<Omit<PaidRow, 'id' | 'account_id' | 'kind' | 'created_at' | 'state'>> & { updated_at: string };

/**
 * Moves a request `from -> to` (the same state for a write of other columns, where the table allows it). A move the
 * kind's table forbids throws ForbiddenStateMove and writes nothing; otherwise the write is a compare-and-set on `from`
 * (and the kind): false when the request was no longer there, so two writers never both move it.
 */
export async function moveWithdrawal(
  trx: Executor,
  request: { id: string; kind: PaidKind },
  from: WithdrawalState,
  to: WithdrawalState,
  patch: WithdrawalPatch,
): Promise<boolean> {
  assertWithdrawalMove(request.kind, from, to);
  const result = await trx
    .updateTable('withdrawals')
    .set({ ...patch, state: to })
    .where('id', '=', request.id)
    .where('kind', '=', request.kind)
    .where('state', '=', from)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

/** One account's requests, newest first, after the cursor position [created_at, id]. */
export async function listAccountWithdrawals(
  db: Executor,
  accountId: string,
  after: KeysetPosition | null,
  fetch: number,
): Promise<WithdrawalRow[]> {
  const query = db
    .selectFrom('withdrawals')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('kind', 'in', [...WITHDRAWAL_KINDS]);
  return (await keysetPage(query, ['created_at', 'id'], 'desc', after, fetch).execute()) as WithdrawalRow[];
}

/** Every account's requests (the review queue when `state` is UNSIGNED), oldest first. */
export async function listWithdrawalsByState(
  db: Executor,
  state: WithdrawalState | null,
  after: KeysetPosition | null,
  fetch: number,
): Promise<WithdrawalRow[]> {
  let query = db
    .selectFrom('withdrawals')
    .selectAll()
    .where('kind', 'in', [...WITHDRAWAL_KINDS]);
  if (state !== null) query = query.where('state', '=', state);
  return (await keysetPage(query, ['created_at', 'id'], 'asc', after, fetch).execute()) as WithdrawalRow[];
}

/** Requests of one network in the given states, oldest first: the payer's work list. */
export async function withdrawalsToWork(
  db: Executor,
  chainId: number,
  states: readonly WithdrawalState[],
  limit: number,
): Promise<PaidRow[]> {
  return db
    .selectFrom('withdrawals')
    .selectAll()
    .where('chain_id', '=', BigInt(chainId))
    .where('state', 'in', [...states])
    .orderBy('created_at')
    .orderBy('id')
    .limit(limit)
    .execute();
}

/** What an account asked for since `since`, FAILED requests (and refunds, which it never asked for) aside. */
export async function requestedSince(db: Executor, accountId: string, since: string): Promise<bigint> {
  const row = await db
    .selectFrom('withdrawals')
    .select((eb) => eb.fn.sum<bigint | null>('amount_micro').as('total'))
    .where('account_id', '=', accountId)
    .where('kind', 'in', [...WITHDRAWAL_KINDS])
    .where('created_at', '>=', since)
    .where('state', '<>', 'FAILED')
    .executeTakeFirst();
  return BigInt(row?.total ?? 0n);
}

/** A refund paid to a deposit's sender says nothing of the account's own addresses: it does not count. */
export async function hasConfirmedWithdrawal(db: Executor, accountId: string): Promise<boolean> {
  const row = await db
    .selectFrom('withdrawals')
    .select('id')
    .where('account_id', '=', accountId)
    .where('kind', 'in', [...WITHDRAWAL_KINDS])
    .where('state', '=', 'CONFIRMED')
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

/** Sums of one account's requests of a kind: still locked (open states) and paid (CONFIRMED). */
export async function withdrawalTotals(
  db: Executor,
  accountId: string,
  kind: WithdrawalKind,
): Promise<{ lockedMicro: bigint; paidMicro: bigint }> {
  const rows = await db
    .selectFrom('withdrawals')
    .select(['state', (eb) => eb.fn.sum<bigint>('amount_micro').as('total')])
    .where('account_id', '=', accountId)
    .where('kind', '=', kind)
    .groupBy('state')
    .execute();
  let lockedMicro = 0n;
  let paidMicro = 0n;
  for (const r of rows) {
    if (OPEN_STATES.includes(r.state)) lockedMicro += BigInt(r.total);
    if (r.state === 'CONFIRMED') paidMicro += BigInt(r.total);
  }
  return { lockedMicro, paidMicro };
}

/** Pinned or sent and not final yet, per network: what the payout wallet still owes. */
export async function pendingPayoutTotal(db: Executor, chainId: number): Promise<{ count: bigint; amountMicro: bigint }> {
  const row = await db
    .selectFrom('withdrawals')
    .select([(eb) => eb.fn.countAll<bigint>().as('count'), (eb) => eb.fn.sum<bigint | null>('amount_micro').as('total')])
    .where('chain_id', '=', BigInt(chainId))
    .where('state', 'in', ['INTENT', 'SIGNED', 'BROADCAST'])
    .executeTakeFirst();
  return { count: BigInt(row?.count ?? 0n), amountMicro: BigInt(row?.total ?? 0n) };
}

/** Pinned and not final, in micro: the payer keeps this much in the wallet before pinning more. */
export async function pinnedUnconfirmedMicro(db: Executor, chainId: number): Promise<bigint> {
  const row = await db
    .selectFrom('withdrawals')
    .select((eb) => eb.fn.sum<bigint | null>('amount_micro').as('total'))
    .where('chain_id', '=', BigInt(chainId))
    .where('state', 'in', ['SIGNED', 'BROADCAST'])
    .executeTakeFirst();
  return BigInt(row?.total ?? 0n);
}

export async function insertWithdrawalTransaction(trx: Tx, row: WithdrawalTransactionRow): Promise<void> {
  await trx.insertInto('withdrawal_transactions').values(row).execute();
}

/** Every transaction signed for a request, oldest first (any of them may be the one mined). */
export async function withdrawalTransactions(db: Executor, withdrawalId: string): Promise<WithdrawalTransactionRow[]> {
  return db
    .selectFrom('withdrawal_transactions')
    .selectAll()
    .where('withdrawal_id', '=', withdrawalId)
    .orderBy('created_at')
    .orderBy('tx_hash')
    .execute();
}

// --- the payout wallet's state per network

export async function initPayoutWalletState(db: Executor, input: { chainId: number; payerAddress: string; at: string }): Promise<void> {
  await db
    .insertInto('payout_wallet_state')
    .values({
      chain_id: BigInt(input.chainId),
      payer_address: input.payerAddress,
      next_nonce: 0n,
      lease_owner: null,
      lease_until: null,
      updated_at: input.at,
    })
    .onConflict((oc) => oc.column('chain_id').doNothing())
    .execute();
}

/** Takes or renews the network's payer lease (store/leases.ts): exactly one replica pays at a time. */
export function acquirePayerLease(db: Executor, chainId: number, owner: string, now: Date, leaseMs: number): Promise<boolean> {
  return takeLease(db, 'payout_wallet_state', chainId, owner, now, leaseMs);
}

export async function releasePayerLease(db: Executor, chainId: number, owner: string): Promise<void> {
  await db
    .updateTable('payout_wallet_state')
    .set({ lease_owner: null, lease_until: null })
    .where('chain_id', '=', BigInt(chainId))
    .where('lease_owner', '=', owner)
    .execute();
}

export async function payoutWalletState(db: Executor, chainId: number) {
  return db.selectFrom('payout_wallet_state').selectAll().where('chain_id', '=', BigInt(chainId)).executeTakeFirst();
}

/**
 * Moves the next nonce past `nonce` while this replica holds the lease and the state is as read: the nonce is then
 * this request's alone. Runs in the transaction that stores the signed transaction.
 */
export async function claimNonce(
  trx: Tx,
  input: { chainId: number; owner: string; payerAddress: string; expectedNext: bigint; nonce: bigint; now: Date },
): Promise<boolean> {
  const result = await trx
    .updateTable('payout_wallet_state')
    .set({ next_nonce: input.nonce + 1n, payer_address: input.payerAddress, updated_at: input.now.toISOString() })
    .where('chain_id', '=', BigInt(input.chainId))
    .where('lease_owner', '=', input.owner)
    .where('lease_until', '>=', input.now.toISOString())
    .where('next_nonce', '=', input.expectedNext)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

// --- a host's earnings

export interface JobEarningRow {
  job_id: string;
  earned_micro: bigint;
  last_at: string;
}

/**
 * A host's metered earnings per job (charge postings to its pending earnings, or to payable when maturity is off or
 * before it existed), latest first, after [last_at, job_id].
 */
export async function jobEarnings(
  db: Executor,
  hostAccountId: string,
  after: KeysetPosition | null,
  fetch: number,
): Promise<JobEarningRow[]> {
  const payable = ledgerAccountKey(hostAccountId, 'payable');
  const pending = ledgerAccountKey(hostAccountId, 'pending');
  const [lastAt, jobId] = (after ?? [null, null]) as [string | null, string | null];
  const rows = await sql<{ job_id: string; earned_micro: bigint; last_at: string }>`
    select reference as job_id, sum(amount_micro) as earned_micro, max(at) as last_at
    from ledger_postings
    where to_key in (${pending}, ${payable}) and kind = 'charge_host'
    group by reference
    ${after ? sql`having max(at) < ${lastAt} or (max(at) = ${lastAt} and reference < ${jobId})` : sql``}
    order by max(at) desc, reference desc
    limit ${fetch}`.execute(db);
  return rows.rows.map((r) => ({ job_id: r.job_id, earned_micro: BigInt(r.earned_micro), last_at: r.last_at }));
}

/** A withdrawal address by id, removed or not (the payer compares its version with the request's). */
export async function findWithdrawalAddressAnyState(db: Executor, id: string) {
  return db.selectFrom('withdrawal_addresses').selectAll().where('id', '=', id).executeTakeFirst();
}
