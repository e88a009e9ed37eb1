import type { Selectable } from 'kysely';
import { randomUUID } from 'node:crypto';
import { ledgerAccountKey } from '../domain/ledger/accounts.js';
import { assertDepositMove, type DepositState } from '../domain/payments/deposits.js';
import { type Executor, isPostgres, type Tx } from './db.js';
import { type KeysetPosition, keysetPage } from './keyset.js';
import { takeLease } from './leases.js';
import type { ChainDepositsTable, ChainWatchStateTable } from './tables/deposits.js';

// Deposit addresses, chain deposits and the per-network watch state (cursor, heads, lease). Both dialects.
// A deposit's state is written here only: upsertSeenDeposits (SEEN) and the moves below, each checked against
// DEPOSIT_MOVES (domain/payments/deposits.ts) and written by compare-and-set on the state it leaves (moveDeposit).

export type DepositRow = ChainDepositsTable;
export type WatchStateRow = Selectable<ChainWatchStateTable>;

/** The lease of a network moved to another replica (or expired) while this one worked: its writes are refused. */
export class LeaseLostError extends Error {
  override name = 'LeaseLostError';
}

// --- deposit addresses ---

export async function depositAddressOf(db: Executor, accountId: string): Promise<{ index: bigint; address: string } | null> {
  const row = await db
    .selectFrom('deposit_addresses')
    .select(['derivation_index', 'address'])
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  return row ? { index: row.derivation_index, address: row.address } : null;
}

/**
 * The account's deposit address, created on first call from the next index of the sequence. A concurrent first
 * call for the same account loses on the primary key and reads the winner's row (its index is skipped, never reused).
 */
export async function ensureDepositAddress(
  trx: Tx,
  accountId: string,
  derive: (index: bigint) => string,
  at: Date,
): Promise<{ index: bigint; address: string; created: boolean }> {
  const existing = await depositAddressOf(trx, accountId);
  if (existing) return { ...existing, created: false };
  const next = await trx
    .updateTable('deposit_address_sequence')
    .set((eb) => ({ next_index: eb('next_index', '+', 1n) }))
    .where('name', '=', 'deposit')
    .returning('next_index')
    .executeTakeFirstOrThrow();
  const index = next.next_index - 1n;
  const address = derive(index).toLowerCase();
  const inserted = await trx
    .insertInto('deposit_addresses')
    .values({ account_id: accountId, derivation_index: index, address, created_at: at.toISOString() })
    .onConflict((oc) => oc.column('account_id').doNothing())
    .returning('address')
    .executeTakeFirst();
  if (inserted) return { index, address, created: true };
  const winner = await depositAddressOf(trx, accountId);
  if (!winner) throw new Error(`deposit address of ${accountId} vanished`);
  return { ...winner, created: false };
}

/** Deposit addresses with an index above `afterIndex`, in index order (the watcher loads new ones incrementally). */
export async function depositAddressesAfter(
  db: Executor,
  afterIndex: bigint,
  limit: number,
): Promise<Array<{ index: bigint; address: string; accountId: string }>> {
  const rows = await db
    .selectFrom('deposit_addresses')
    .select(['derivation_index', 'address', 'account_id'])
    .where('derivation_index', '>', afterIndex)
    .orderBy('derivation_index')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ index: r.derivation_index, address: r.address, accountId: r.account_id }));
}

// --- watch state, cursor and lease ---

export async function watchState(db: Executor, chainId: number): Promise<WatchStateRow | null> {
  return (await db.selectFrom('chain_watch_state').selectAll().where('chain_id', '=', BigInt(chainId)).executeTakeFirst()) ?? null;
}

export async function watchStates(db: Executor): Promise<WatchStateRow[]> {
  return db.selectFrom('chain_watch_state').selectAll().orderBy('chain_id').execute();
}

/** Creates a network's row at its first cursor; a row that exists is left as it is. */
export async function initWatchState(
  db: Executor,
  input: { chainId: number; network: string; cursorBlock: bigint; cursorHash: string; at: Date },
): Promise<void> {
  await db
    .insertInto('chain_watch_state')
    .values({
      chain_id: BigInt(input.chainId),
      network: input.network,
      cursor_block: input.cursorBlock,
      cursor_hash: input.cursorHash,
      head_block: null,
      finalized_block: null,
      finalized_advanced_at: null,
      lease_owner: null,
      lease_until: null,
      updated_at: input.at.toISOString(),
    })
    .onConflict((oc) => oc.column('chain_id').doNothing())
    .execute();
}

/** Takes or renews the network's lease (store/leases.ts). True when this replica holds it now. */
export function acquireLease(db: Executor, chainId: number, owner: string, now: Date, leaseMs: number): Promise<boolean> {
  return takeLease(db, 'chain_watch_state', chainId, owner, now, leaseMs);
}

/** Gives the lease up (a replica shutting down), so another takes over at once instead of after expiry. */
export async function releaseLease(db: Executor, chainId: number, owner: string): Promise<void> {
  await db
    .updateTable('chain_watch_state')
    .set({ lease_owner: null, lease_until: null })
    .where('chain_id', '=', BigInt(chainId))
    .where('lease_owner', '=', owner)
    .execute();
}

/**
 * Moves the cursor from `expectedBlock` to `block` (a range read, or a rewind after a reorg) while this replica
 * still holds the lease. Runs in the transaction that stores the range's deposits, so rows and cursor commit together.
 */
export async function moveCursor(
  trx: Tx,
  input: { chainId: number; owner: string; expectedBlock: bigint; block: bigint; hash: string; now: Date },
): Promise<void> {
  const result = await trx
    .updateTable('chain_watch_state')
    .set({ cursor_block: input.block, cursor_hash: input.hash, updated_at: input.now.toISOString() })
    .where('chain_id', '=', BigInt(input.chainId))
    .where('lease_owner', '=', input.owner)
    .where('lease_until', '>=', input.now.toISOString())
    .where('cursor_block', '=', input.expectedBlock)
    .executeTakeFirst();
  if (result.numUpdatedRows !== 1n) throw new LeaseLostError(`chain ${input.chainId}: the lease or the cursor moved under this replica`);
}

/** Records the heads last seen; `finalized_advanced_at` moves only when the finalized number grows. */
export async function recordHeads(
  db: Executor,
  input: { chainId: number; owner: string; head: bigint; finalized: bigint; now: Date },
): Promise<WatchStateRow | null> {
  const state = await watchState(db, input.chainId);
  if (!state || state.lease_owner !== input.owner) return state;
  const advanced = state.finalized_block === null || input.finalized > state.finalized_block;
  await db
    .updateTable('chain_watch_state')
    .set({
      head_block: input.head,
      finalized_block: advanced ? input.finalized : state.finalized_block,
      finalized_advanced_at: advanced ? input.now.toISOString() : state.finalized_advanced_at,
      updated_at: input.now.toISOString(),
    })
    .where('chain_id', '=', BigInt(input.chainId))
    .where('lease_owner', '=', input.owner)
    .execute();
  return watchState(db, input.chainId);
}

// --- deposits ---

export interface SeenDeposit {
  chainId: number;
  network: string;
  txHash: string;
  logIndex: number;
  accountId: string;
  address: string;
  asset: string;
  tokenAddress: string | null;
  amountRaw: bigint;
  decimals: number;
  amountMicro: bigint | null;
  blockNumber: bigint;
  blockHash: string;
  /** The transfer's sender: a refund goes back to it. */
  fromAddress: string | null;
}

/**
 * Records deposits as SEEN. One seen again (a rescan after a reorg) takes its new block; a deposit already final
 * (credited, held, below minimum) is never touched.
 */
export async function upsertSeenDeposits(trx: Tx, rows: SeenDeposit[], at: Date): Promise<void> {
  const atIso = at.toISOString();
  // Bounded statements: a range full of deposits is written a few hundred rows at a time.
  for (let i = 0; i < rows.length; i += 200) {
    const chunk = rows.slice(i, i + 200);
    await trx
      .insertInto('chain_deposits')
      .values(
        chunk.map((d) => ({
          id: randomUUID(),
          chain_id: BigInt(d.chainId),
          network: d.network,
          tx_hash: d.txHash.toLowerCase(),
          log_index: BigInt(d.logIndex),
          account_id: d.accountId,
          address: d.address.toLowerCase(),
          asset: d.asset,
          token_address: d.tokenAddress?.toLowerCase() ?? null,
          amount_raw: d.amountRaw.toString(),
          decimals: BigInt(d.decimals),
          amount_micro: d.amountMicro,
          block_number: d.blockNumber,
          block_hash: d.blockHash.toLowerCase(),
          state: 'SEEN' as const,
          reason: null,
          price_answer: null,
          price_decimals: null,
          seen_at: atIso,
          final_at: null,
          credited_at: null,
          posting_id: null,
          from_address: d.fromAddress?.toLowerCase() ?? null,
          refund_id: null,
          resolved_by: null,
          resolution_reason: null,
          resolved_at: null,
        })),
      )
      .onConflict((oc) =>
        oc
          .columns(['chain_id', 'tx_hash', 'log_index'])
          .doUpdateSet((eb) => ({ block_number: eb.ref('excluded.block_number'), block_hash: eb.ref('excluded.block_hash') }))
          .where('chain_deposits.state', '=', 'SEEN'),
      )
      .execute();
  }
}

/** SEEN deposits at or below the finalized block, oldest block first, at most `limit`. */
export async function seenDepositsUpTo(db: Executor, chainId: number, finalized: bigint, limit: number): Promise<DepositRow[]> {
  return db
    .selectFrom('chain_deposits')
    .selectAll()
    .where('chain_id', '=', BigInt(chainId))
    .where('state', '=', 'SEEN')
    .where('block_number', '<=', finalized)
    .orderBy('block_number')
    .orderBy('log_index')
    .limit(limit)
    .execute();
}

/** Drops SEEN deposits above a block (a reorg: the rescan finds what is still canonical). Final rows never go. */
export async function dropSeenAbove(trx: Tx, chainId: number, block: bigint): Promise<number> {
  const result = await trx
    .deleteFrom('chain_deposits')
    .where('chain_id', '=', BigInt(chainId))
    .where('state', '=', 'SEEN')
    .where('block_number', '>', block)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** Drops one SEEN deposit whose block is no longer canonical. */
export async function dropSeenDeposit(db: Executor, id: string): Promise<boolean> {
  const result = await db.deleteFrom('chain_deposits').where('id', '=', id).where('state', '=', 'SEEN').executeTakeFirst();
  return result.numDeletedRows === 1n;
}

/** Re-reads a deposit inside a transaction (locked on Postgres), so its state decides once. */
export async function lockDeposit(trx: Tx, id: string): Promise<DepositRow | null> {
  let query = trx.selectFrom('chain_deposits').selectAll().where('id', '=', id);
  if (isPostgres(trx)) query = query.forUpdate();
  return (await query.executeTakeFirst()) ?? null;
}

/**
 * The account's available balance with its ledger row locked on Postgres (SQLite serialises writers), so a cap
 * decision and the credit it allows cannot interleave with another credit.
 */
export async function lockedAvailableMicro(trx: Tx, accountId: string): Promise<bigint> {
  let query = trx.selectFrom('ledger_accounts').select('balance_micro').where('key', '=', ledgerAccountKey(accountId, 'available'));
  if (isPostgres(trx)) query = query.forUpdate();
  return (await query.executeTakeFirst())?.balance_micro ?? 0n;
}

/**
 * An account's BELOW_MINIMUM deposits, oldest first, at most `limit` (locked on Postgres): they add up, and are
 * credited together once their sum reaches the minimum.
 */
export async function belowMinimumDepositsOf(trx: Tx, accountId: string, limit: number): Promise<DepositRow[]> {
  let query = trx
    .selectFrom('chain_deposits')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('state', '=', 'BELOW_MINIMUM')
    .orderBy('final_at')
    .orderBy('id')
    .limit(limit);
  if (isPostgres(trx)) query = query.forUpdate();
  return query.execute();
}

export interface FinalUpdate {
  amountMicro: bigint | null;
  reason: string | null;
  price: { answer: bigint; decimals: number } | null;
  postingId: string | null;
  at: Date;
  /** An operator's decision (an override credit): who, and why. */
  resolution?: { by: string; reason: string };
}

/** The columns a move may write besides the state. */
type DepositPatch = Partial<Omit<DepositRow, 'id' | 'state' | 'chain_id' | 'tx_hash' | 'log_index' | 'account_id'>>;

/**
 * The one state write of a deposit after SEEN, named by its id or by its refund's: `from -> to` must be in
 * DEPOSIT_MOVES (ForbiddenStateMove otherwise, and nothing is written), and the write is a compare-and-set on `from`:
 * false when the deposit was no longer there, so two writers never both move it.
 */
export async function moveDeposit(
  trx: Tx,
  which: { id: string } | { refundId: string },
  from: DepositState,
  to: DepositState,
  patch: DepositPatch,
): Promise<boolean> {
  assertDepositMove(from, to);
  let query = trx
    .updateTable('chain_deposits')
    .set({ ...patch, state: to })
    .where('state', '=', from);
  query = 'id' in which ? query.where('id', '=', which.id) : query.where('refund_id', '=', which.refundId);
  const result = await query.executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

/**
 * A deposit leaves `from` (SEEN, HELD when released, BELOW_MINIMUM when its account's small deposits add up) for
 * `to`, with its amount, price and posting; false when it was not in `from`.
 */
export async function finishDeposit(trx: Tx, id: string, from: DepositState, to: DepositState, update: FinalUpdate): Promise<boolean> {
  const at = update.at.toISOString();
  return moveDeposit(trx, { id }, from, to, {
    amount_micro: update.amountMicro,
    reason: update.reason,
    ...(update.price ? { price_answer: update.price.answer.toString(), price_decimals: BigInt(update.price.decimals) } : {}),
    posting_id: update.postingId,
    ...(from === 'SEEN' ? { final_at: at } : {}),
    ...(to === 'CREDITED' ? { credited_at: at } : {}),
    ...(update.resolution ? { resolved_by: update.resolution.by, resolution_reason: update.resolution.reason, resolved_at: at } : {}),
  });
}

/** A HELD deposit goes to REFUNDING with its refund, by compare-and-set; false when it was no longer HELD. */
export async function markRefunding(
  trx: Tx,
  input: { id: string; refundId: string; postingId: string; by: string; reason: string; at: Date },
): Promise<boolean> {
  return moveDeposit(trx, { id: input.id }, 'HELD', 'REFUNDING', {
    refund_id: input.refundId,
    posting_id: input.postingId,
    resolved_by: input.by,
    resolution_reason: input.reason,
    resolved_at: input.at.toISOString(),
  });
}

/**
 * A refund's end, in the payer's transaction: paid (REFUNDED), or failed (HELD again, for an operator or for room;
 * `refund_id` stays, so what comes next is keyed apart from the failed refund's postings).
 */
export async function finishRefund(trx: Tx, refundId: string, to: 'REFUNDED' | 'HELD'): Promise<void> {
  const patch: DepositPatch = to === 'HELD' ? { reason: 'refund_failed', posting_id: null } : {};
  if (!(await moveDeposit(trx, { refundId }, 'REFUNDING', to, patch))) throw new Error(`refund ${refundId} has no REFUNDING deposit`);
}

export async function findDeposit(db: Executor, id: string): Promise<DepositRow | null> {
  return (await db.selectFrom('chain_deposits').selectAll().where('id', '=', id).executeTakeFirst()) ?? null;
}

/** A deposit as operators see it: the row, and its refund's progress on the payout path. */
export interface OperatorDepositRow extends DepositRow {
  refund_state: string | null;
  refund_tx_hash: string | null;
}

/** Deposits in `states` over every account, oldest final first, after [final_at, id]: what waits on an operator. */
export async function depositsInStates(
  db: Executor,
  states: readonly DepositState[],
  after: KeysetPosition | null,
  fetch: number,
): Promise<OperatorDepositRow[]> {
  const query = db
    .selectFrom('chain_deposits')
    .leftJoin('withdrawals', 'withdrawals.id', 'chain_deposits.refund_id')
    .selectAll('chain_deposits')
    .select(['withdrawals.state as refund_state', 'withdrawals.tx_hash as refund_tx_hash'])
    .where('chain_deposits.state', 'in', [...states]);
  return keysetPage(query, ['chain_deposits.final_at', 'chain_deposits.id'], 'asc', after, fetch).execute();
}
/** A SEEN deposit that cannot be decided yet (its price is refused) says why. */
export async function noteSeenDeposit(db: Executor, id: string, reason: string | null): Promise<void> {
  await db.updateTable('chain_deposits').set({ reason }).where('id', '=', id).where('state', '=', 'SEEN').execute();
}

/** How many deposits are HELD now, over all accounts and networks. */
export async function countHeldDeposits(db: Executor): Promise<bigint> {
  const row = await db
    .selectFrom('chain_deposits')
    .select((eb) => eb.fn.countAll<bigint | number | string>().as('n'))
    .where('state', '=', 'HELD')
    .executeTakeFirst();
  return BigInt(row?.n ?? 0);
}

/**
 * Accounts with HELD deposits of at most `largestMicro` (bigger ones never fit: they wait for an operator, and must
 * not crowd out the accounts whose deposits may), at most `limit`.
 */
export async function accountsWithHeldDeposits(db: Executor, limit: number, largestMicro: bigint): Promise<string[]> {
  const rows = await db
    .selectFrom('chain_deposits')
    .select('account_id')
    .where('state', '=', 'HELD')
    .where('amount_micro', '<=', largestMicro)
    .groupBy('account_id')
    .limit(limit)
    .execute();
  return rows.map((r) => r.account_id);
}

/** An account's HELD deposits of at most `largestMicro`, oldest final first, at most `limit`. */
export async function heldDepositsOf(trx: Tx, accountId: string, limit: number, largestMicro: bigint): Promise<DepositRow[]> {
  return trx
    .selectFrom('chain_deposits')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('state', '=', 'HELD')
    .where('amount_micro', '<=', largestMicro)
    .orderBy('final_at')
    .orderBy('block_number')
    .orderBy('log_index')
    .limit(limit)
    .execute();
}

/** Position of a deposit in an account's history (newest first). */
export interface DepositPosition {
  seenAt: string;
  id: string;
}

/** An account's deposits, newest first, after a position; `fetch` rows (the page size plus one). */
export async function depositsOfAccount(
  db: Executor,
  accountId: string,
  after: DepositPosition | null,
  fetch: number,
): Promise<DepositRow[]> {
  let query = db.selectFrom('chain_deposits').selectAll().where('account_id', '=', accountId);
  if (after) {
    query = query.where((eb) =>
      eb.or([eb('seen_at', '<', after.seenAt), eb.and([eb('seen_at', '=', after.seenAt), eb('id', '<', after.id)])]),
    );
  }
  return query.orderBy('seen_at', 'desc').orderBy('id', 'desc').limit(fetch).execute();
}

/** How many deposits a network has in each state (operators' view). */
export async function depositCountsByState(db: Executor, chainId: number): Promise<Record<string, bigint>> {
  const rows = await db
    .selectFrom('chain_deposits')
    .select(['state', (eb) => eb.fn.countAll<bigint>().as('n')])
    .where('chain_id', '=', BigInt(chainId))
    .groupBy('state')
    .execute();
  return Object.fromEntries(rows.map((r) => [r.state, BigInt(r.n)]));
}
