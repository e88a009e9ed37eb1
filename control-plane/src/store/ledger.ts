import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { type LedgerAccountRef, ledgerAccountKey } from '../domain/ledger/accounts.js';
import {
  amountTooLarge,
  balancesWithinLimit,
  debitAllowed,
  LEDGER_BALANCE_MAX_MICRO,
  MAX_TRANSFER_MICRO,
  type PostingKind,
  transferProblem,
} from '../domain/ledger/postings.js';
import { DomainError } from '../errors.js';
import { type Executor, isPostgres, type Store, type Tx } from './db.js';
import { pendingLotMismatches } from './pending-earnings.js';
import { inTransactionWithRetry, type TransactionOptions } from './transaction.js';

export interface TransferInput {
  from: LedgerAccountRef;
  to: LedgerAccountRef;
  amountMicro: bigint;
  kind: PostingKind;
  /** What the posting is about (job id, deposit id, audit id); not unique. */
  reference: string;
  /** Unique when set (chain id + tx hash + log index, x402 nonce): a repeat posts once. */
  externalRef?: string | null;
  at: Date;
}

export interface TransferResult {
  /** `already_posted`: the external reference was posted before with the same accounts, amount and kind. */
  status: 'posted' | 'already_posted';
  postingId: string;
  /** Balances after this transfer (for `already_posted`: as they are now). */
  fromBalanceMicro: bigint;
  toBalanceMicro: bigint;
}

interface LockedAccount {
  key: string;
  account_id: string | null;
  balance_micro: bigint;
}

/**
 * Moves money between two ledger accounts inside the caller's transaction: creates missing accounts,
 * locks both balance rows in key order, refuses a debit that would make a person's or job's account
 * negative (INSUFFICIENT_BALANCE), inserts the immutable posting and updates both cached balances.
 * A failure throws, so the caller's transaction rolls back and nothing changes.
 */
export async function transfer(trx: Tx, input: TransferInput): Promise<TransferResult> {
  const problem = transferProblem(input);
  if (problem) throw new RangeError(`invalid ledger transfer: ${problem}`);
  if (amountTooLarge(input.amountMicro)) {
    throw new DomainError(
      'AMOUNT_TOO_LARGE',
      `The amount ${input.amountMicro} micro is more than one transfer may move (${MAX_TRANSFER_MICRO}).`,
    );
  }
  const fromKey = ledgerAccountKey(input.from.owner, input.from.kind);
  const toKey = ledgerAccountKey(input.to.owner, input.to.kind);
  const at = input.at.toISOString();
  const postgres = isPostgres(trx);

  const byKey = await lockAccounts(
    trx,
    postgres,
    [
      { key: fromKey, ref: input.from },
      { key: toKey, ref: input.to },
    ],
    at,
  );
  const from = byKey.get(fromKey) as LockedAccount;
  const to = byKey.get(toKey) as LockedAccount;

  const externalRef = input.externalRef ?? null;
  const debitOk = debitAllowed(input.from.kind, from.balance_micro, input.amountMicro);
  const withinLimit = balancesWithinLimit(from.balance_micro - input.amountMicro, to.balance_micro + input.amountMicro);
  if (!debitOk || !withinLimit) {
    // A repeat of an already-posted reference is answered even if the money has moved on since.
    const existing = externalRef === null ? undefined : await findByExternalRef(trx, externalRef);
    if (existing) return repeated(existing, input, fromKey, toKey, from, to);
    if (!debitOk) {
      throw new DomainError(
        'INSUFFICIENT_BALANCE',
        input.from.kind === 'available' ? 'The available balance is too low.' : `The ${input.from.kind} balance is too low.`,
      );
    }
    throw new DomainError('BALANCE_LIMIT_EXCEEDED', `No ledger balance may pass ${LEDGER_BALANCE_MAX_MICRO} micro either way.`);
  }

  const postingId = randomUUID();
  const row = {
    id: postingId,
    at,
    from_key: fromKey,
    to_key: toKey,
    amount_micro: input.amountMicro,
    kind: input.kind,
    reference: input.reference,
    external_ref: externalRef,
  };
  if (externalRef !== null) {
    // A repeat (or a concurrent post of the same reference, once it commits) loses here without aborting
    // the transaction; the existing posting then decides between already_posted and a conflict.
    const inserted = await trx
      .insertInto('ledger_postings')
      .values(row)
      .onConflict((oc) => oc.column('external_ref').doNothing())
      .returning('id')
      .executeTakeFirst();
    if (!inserted) {
      const existing = await findByExternalRef(trx, externalRef);
      if (!existing) throw new Error(`ledger posting for external reference ${externalRef} vanished`);
      return repeated(existing, input, fromKey, toKey, from, to);
    }
  } else {
    await trx.insertInto('ledger_postings').values(row).execute();
  }

  // Both cached balances in one statement (relative, so it never overwrites a concurrent change).
  const amount = input.amountMicro;
  await sql`update ledger_accounts
    set balance_micro = balance_micro + (case when key = ${toKey} then cast(${amount} as bigint) else cast(${-amount} as bigint) end),
        updated_at = ${at}
    where key in (${fromKey}, ${toKey})`.execute(trx);
  return { status: 'posted', postingId, fromBalanceMicro: from.balance_micro - amount, toBalanceMicro: to.balance_micro + amount };
}

export type RunTransferOptions = TransactionOptions;

/** One transfer in its own transaction, retrying transient conflicts a bounded number of times. */
export async function runTransfer(store: Store, input: TransferInput, options: RunTransferOptions = {}): Promise<TransferResult> {
  return inTransactionWithRetry(store, (trx) => transfer(trx, input), options);
}

/** Kept here for existing callers; the transaction helpers live in store/transaction.ts. */
export { inTransactionWithRetry };

/** The cached balance of one ledger account (0 when it has never been used). */
export async function balanceOf(db: Executor, account: LedgerAccountRef): Promise<bigint> {
  const row = await db
    .selectFrom('ledger_accounts')
    .select('balance_micro')
    .where('key', '=', ledgerAccountKey(account.owner, account.kind))
    .executeTakeFirst();
  return row?.balance_micro ?? 0n;
}

export interface OwnerBalances {
  availableMicro: bigint;
  /** Sum over the account's job holds. */
  heldMicro: bigint;
  /** A host's earnings not matured yet (issue 24). */
  pendingMicro: bigint;
  payableMicro: bigint;
}

/** An Ark account's balances: its available, the sum of its job holds, and (for hosts) its payable. */
export async function balancesOfOwner(db: Executor, accountId: string): Promise<OwnerBalances> {
  const rows = await db
    .selectFrom('ledger_accounts')
    .select(['kind', (eb) => eb.fn.sum<bigint>('balance_micro').as('total')])
    .where('account_id', '=', accountId)
    .where('kind', 'in', ['available', 'hold', 'pending', 'payable'])
    .groupBy('kind')
    .execute();
  const total = (kind: string) => BigInt(rows.find((r) => r.kind === kind)?.total ?? 0n);
  return { availableMicro: total('available'), heldMicro: total('hold'), pendingMicro: total('pending'), payableMicro: total('payable') };
}

/** Sum of every cached balance; double entry keeps it at zero. */
export async function sumOfAllBalances(db: Executor): Promise<bigint> {
  const row = await db
    .selectFrom('ledger_accounts')
    .select((eb) => eb.fn.sum<bigint | null>('balance_micro').as('total'))
    .executeTakeFirst();
  return BigInt(row?.total ?? 0n);
}

export interface StoredPosting {
  id: string;
  at: string;
  fromKey: string;
  toKey: string;
  amountMicro: bigint;
  kind: PostingKind;
  reference: string;
  externalRef: string | null;
}

/** The posting made for an external reference, if any. */
export async function postingByExternalRef(db: Executor, externalRef: string): Promise<StoredPosting | null> {
  const row = await findByExternalRef(db, externalRef);
  return row ? toPosting(row) : null;
}

/** Postings about one reference (a job, a deposit), oldest first; bounded by `limit`. */
export async function postingsByReference(db: Executor, reference: string, limit = 1000): Promise<StoredPosting[]> {
  const rows = await db
    .selectFrom('ledger_postings')
    .selectAll()
    .where('reference', '=', reference)
    .orderBy('at')
    .orderBy('id')
    .limit(Math.max(1, Math.min(limit, 10_000)))
    .execute();
  return rows.map(toPosting);
}

export interface LedgerDiscrepancy {
  key: string;
  /** pending_lots_mismatch: a host's pending balance is not the sum of its unmatured lots (recomputed: the lots). */
  problem: 'cache_mismatch' | 'negative_balance' | 'pending_lots_mismatch';
  cachedMicro: bigint;
  recomputedMicro: bigint;
}

export interface LedgerVerification {
  ok: boolean;
  accounts: bigint;
  postings: bigint;
  /** Sum over all cached balances; must be zero. */
  sumMicro: bigint;
  /** At most `limit` of them. */
  discrepancies: LedgerDiscrepancy[];
}

/**
 * Recomputes every balance from the postings and compares it with the cache, and every host's pending balance with
 * its pending lots, in one consistent
 * snapshot (repeatable read on Postgres), so it can run beside live traffic.
 */
export async function verifyLedger(store: Store, options: { limit?: number } = {}): Promise<LedgerVerification> {
  const limit = Math.max(1, Math.min(options.limit ?? 1000, 100_000));
  const builder = store.db.transaction();
  const run = store.dialect === 'postgres' ? builder.setIsolationLevel('repeatable read') : builder;
  return run.execute(async (trx) => {
    const rows = await sql<{ key: string; kind: string; cached: bigint; recomputed: bigint }>`
      select a.key as key, a.kind as kind, a.balance_micro as cached,
             coalesce(i.total, 0) - coalesce(o.total, 0) as recomputed
      from ledger_accounts a
      left join (select to_key as k, sum(amount_micro) as total from ledger_postings group by to_key) i on i.k = a.key
      left join (select from_key as k, sum(amount_micro) as total from ledger_postings group by from_key) o on o.k = a.key
      where a.balance_micro <> coalesce(i.total, 0) - coalesce(o.total, 0)
         or (a.kind not in ('external', 'adjustment') and a.balance_micro < 0)
      order by a.key
      limit ${limit}`.execute(trx);
    const counts = await sql<{ accounts: bigint; postings: bigint }>`
      select (select count(*) from ledger_accounts) as accounts, (select count(*) from ledger_postings) as postings`.execute(trx);
    const sumMicro = await sumOfAllBalances(trx);
    const discrepancies = rows.rows.map((r): LedgerDiscrepancy => {
      const cachedMicro = BigInt(r.cached);
      const recomputedMicro = BigInt(r.recomputed);
      return { key: r.key, problem: cachedMicro !== recomputedMicro ? 'cache_mismatch' : 'negative_balance', cachedMicro, recomputedMicro };
    });
    // Pending earnings (issue 24): each host's pending balance is the sum of what is left of its unmatured lots.
    for (const m of await pendingLotMismatches(trx, limit)) {
      discrepancies.push({ key: m.key, problem: 'pending_lots_mismatch', cachedMicro: m.cachedMicro, recomputedMicro: m.lotsMicro });
    }
    const count = counts.rows[0];
    return {
      ok: discrepancies.length === 0 && sumMicro === 0n,
      accounts: BigInt(count?.accounts ?? 0n),
      postings: BigInt(count?.postings ?? 0n),
      sumMicro,
      discrepancies,
    };
  });
}

// --- internals ---

type PostingRow = {
  id: string;
  at: string;
  from_key: string;
  to_key: string;
  amount_micro: bigint;
  kind: PostingKind;
  reference: string;
  external_ref: string | null;
};

function toPosting(row: PostingRow): StoredPosting {
  return {
    id: row.id,
    at: row.at,
    fromKey: row.from_key,
    toKey: row.to_key,
    amountMicro: row.amount_micro,
    kind: row.kind,
    reference: row.reference,
    externalRef: row.external_ref,
  };
}

async function findByExternalRef(db: Executor, externalRef: string): Promise<PostingRow | undefined> {
  return db.selectFrom('ledger_postings').selectAll().where('external_ref', '=', externalRef).executeTakeFirst();
}

// TigerBeetle style: the same posting again is success; the same reference with other fields is a conflict.
function repeated(
  existing: PostingRow,
  input: TransferInput,
  fromKey: string,
  toKey: string,
  from: LockedAccount,
  to: LockedAccount,
): TransferResult {
  const same =
    existing.from_key === fromKey &&
    existing.to_key === toKey &&
    existing.amount_micro === input.amountMicro &&
    existing.kind === input.kind;
  if (!same) {
    throw new DomainError(
      'LEDGER_REFERENCE_CONFLICT',
      `External reference ${existing.external_ref} was already posted with different fields.`,
    );
  }
  return { status: 'already_posted', postingId: existing.id, fromBalanceMicro: from.balance_micro, toBalanceMicro: to.balance_micro };
}

/**
 * Ensures both accounts exist and locks them in key order (one order everywhere). An account's first use breaks
 * the order once: the existing accounts are locked before the new one is created, so a transaction that already
 * sees the new account may hold it and wait for one of ours. Postgres would detect that deadlock only after its
 * deadlock_timeout (1 s a time, which twenty racers for one new account made into minutes); instead the new
 * accounts are locked NOWAIT, and one held elsewhere fails at once with lock_not_available (55P03), a transient
 * conflict that inTransactionWithRetry retries from the top, where the account now exists.
 */
async function lockAccounts(
  trx: Tx,
  postgres: boolean,
  wanted: Array<{ key: string; ref: LedgerAccountRef }>,
  at: string,
): Promise<Map<string, LockedAccount>> {
  const keys = wanted.map((w) => w.key).sort();
  const select = async (noWait = false) => {
    let query = trx.selectFrom('ledger_accounts').select(['key', 'account_id', 'balance_micro']).where('key', 'in', keys).orderBy('key');
    if (postgres) query = noWait ? query.forNoKeyUpdate().noWait() : query.forNoKeyUpdate();
    return new Map((await query.execute()).map((r) => [r.key, r] as const));
  };
  let byKey = await select();
  if (byKey.size < keys.length) {
    const missing = wanted
      .filter((w) => !byKey.has(w.key))
      .sort((a, b) => (a.key < b.key ? -1 : 1))
      .map((w) => ({
        key: w.key,
        owner_id: w.ref.owner,
        kind: w.ref.kind,
        account_id: w.ref.accountId,
        balance_micro: 0n,
        updated_at: at,
      }));
    // Race-safe: a concurrent creator wins and we lock its row below.
    await trx
      .insertInto('ledger_accounts')
      .values(missing)
      .onConflict((oc) => oc.column('key').doNothing())
      .execute();
    byKey = await select(true);
  }
  for (const w of wanted) {
    const row = byKey.get(w.key);
    if (!row) throw new Error(`ledger account ${w.key} could not be created`);
    if (row.account_id !== w.ref.accountId) {
      throw new Error(`ledger account ${w.key} belongs to ${row.account_id ?? 'the platform'}, not ${w.ref.accountId ?? 'the platform'}`);
    }
  }
  return byKey;
}
