import { randomUUID } from 'node:crypto';
import { PostgresAdapter } from 'kysely';
import { ledgerAccountKey } from '../domain/ledger/accounts.js';
import type { DepositState } from '../domain/payments/deposits.js';
import type { Executor, Tx } from './db.js';
import type { ChainDepositsTable, ChainWatchStateTable } from './tables/deposits.js';

// Deposit addresses, chain deposits and the per-network watch state (cursor, heads, lease). Both dialects.

export type DepositRow = ChainDepositsTable;
export type WatchStateRow = ChainWatchStateTable;

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

/** Takes or renews the network's lease: free, expired, or already ours. True when this replica holds it now. */
export async function acquireLease(db: Executor, chainId: number, owner: string, now: Date, leaseMs: number): Promise<boolean> {
  const nowIso = now.toISOString();
  const result = await db
    .updateTable('chain_watch_state')
    .set({ lease_owner: owner, lease_until: new Date(now.getTime() + leaseMs).toISOString() })
    .where('chain_id', '=', BigInt(chainId))
    .where((eb) => eb.or([eb('lease_owner', 'is', null), eb('lease_owner', '=', owner), eb('lease_until', '<', nowIso)]))
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
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

export async function olderHeldExists(trx: Tx, accountId: string, exceptId: string): Promise<boolean> {
  const row = await trx
    .selectFrom('chain_deposits')
    .select('id')
    .where('account_id', '=', accountId)
    .where('state', '=', 'HELD')
    .where('id', '<>', exceptId)
    .limit(1)
    .executeTakeFirst();
  return row !== undefined;
}

export interface FinalUpdate {
  state: Exclude<DepositState, 'SEEN'>;
  amountMicro: bigint | null;
  reason: string | null;
  price: { answer: bigint; decimals: number } | null;
  postingId: string | null;
  at: Date;
}

/** A deposit leaves `from` (SEEN, or HELD when released) for a final state; false when it was not in `from`. */
export async function finishDeposit(trx: Tx, id: string, from: DepositState, update: FinalUpdate): Promise<boolean> {
  const at = update.at.toISOString();
  const result = await trx
    .updateTable('chain_deposits')
    .set({
      state: update.state,
      amount_micro: update.amountMicro,
      reason: update.reason,
      ...(update.price ? { price_answer: update.price.answer.toString(), price_decimals: BigInt(update.price.decimals) } : {}),
      posting_id: update.postingId,
      ...(from === 'SEEN' ? { final_at: at } : {}),
      ...(update.state === 'CREDITED' ? { credited_at: at } : {}),
    })
    .where('id', '=', id)
    .where('state', '=', from)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
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

/** Accounts with HELD deposits, at most `limit`. */
export async function accountsWithHeldDeposits(db: Executor, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('chain_deposits')
    .select('account_id')
    .where('state', '=', 'HELD')
    .groupBy('account_id')
    .limit(limit)
    .execute();
  return rows.map((r) => r.account_id);
}

/** An account's HELD deposits, oldest final first, at most `limit`. */
export async function heldDepositsOf(trx: Tx, accountId: string, limit: number): Promise<DepositRow[]> {
  return trx
    .selectFrom('chain_deposits')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('state', '=', 'HELD')
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

function isPostgres(db: Executor): boolean {
  return db.getExecutor().adapter instanceof PostgresAdapter;
}
