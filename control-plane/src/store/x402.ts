import { assertX402IntentMove, type X402IntentState } from '../domain/payments/x402.js';
import { type Executor, isPostgres, isUniqueViolation, type Tx } from './db.js';
import type { X402IntentsTable } from './tables/x402.js';

// x402 top-up intents: one per (chain, token, payer, nonce), from VERIFIED to CONFIRMED or EXCEPTION. Both dialects.
// An intent's state is written here only: insertIntent (VERIFIED), storeSignedSettlement and moveIntent, each move
// checked against X402_INTENT_MOVES (domain/payments/x402.ts) and written by compare-and-set on the state it leaves.

export type X402IntentRow = X402IntentsTable;

export interface NewIntent {
  id: string;
  accountId: string;
  chainId: number;
  network: string;
  token: string;
  payer: string;
  nonce: string;
  payTo: string;
  amountMicro: bigint;
  validAfter: bigint;
  validBefore: bigint;
  signature: string;
  at: Date;
}

/** The intent of an authorization, if one was persisted. */
export async function intentByKey(
  db: Executor,
  key: { chainId: number; token: string; payer: string; nonce: string },
): Promise<X402IntentRow | null> {
  return (
    (await db
      .selectFrom('x402_intents')
      .selectAll()
      .where('chain_id', '=', BigInt(key.chainId))
      .where('token', '=', key.token.toLowerCase())
      .where('payer', '=', key.payer.toLowerCase())
      .where('nonce', '=', key.nonce.toLowerCase())
      .executeTakeFirst()) ?? null
  );
}

export async function intentById(db: Executor, id: string): Promise<X402IntentRow | null> {
  return (await db.selectFrom('x402_intents').selectAll().where('id', '=', id).executeTakeFirst()) ?? null;
}

/** Locks the intent's row on Postgres (SQLite serialises writers). */
export async function lockIntent(trx: Tx, id: string): Promise<X402IntentRow | null> {
  let query = trx.selectFrom('x402_intents').selectAll().where('id', '=', id);
  if (isPostgres(trx)) query = query.forUpdate();
  return (await query.executeTakeFirst()) ?? null;
}

/**
 * Persists a verified authorization as VERIFIED. Answers false when an intent for the same authorization exists
 * (a concurrent first attempt won): the caller reads that one instead.
 */
export async function insertIntent(db: Executor, intent: NewIntent): Promise<boolean> {
  const at = intent.at.toISOString();
  const result = await db
    .insertInto('x402_intents')
    .values({
      id: intent.id,
      account_id: intent.accountId,
      chain_id: BigInt(intent.chainId),
      network: intent.network,
      token: intent.token.toLowerCase(),
      payer: intent.payer.toLowerCase(),
      nonce: intent.nonce.toLowerCase(),
      pay_to: intent.payTo.toLowerCase(),
      amount_micro: intent.amountMicro,
      valid_after: intent.validAfter.toString(),
      valid_before: intent.validBefore.toString(),
      signature: intent.signature,
      state: 'VERIFIED',
      reason: null,
      gas_wallet: null,
      gas_nonce: null,
      raw_tx: null,
      tx_hash: null,
      block_number: null,
      block_hash: null,
      log_index: null,
      credited_micro: null,
      posting_id: null,
      created_at: at,
      updated_at: at,
      credited_at: null,
    })
    .onConflict((oc) => oc.columns(['chain_id', 'token', 'payer', 'nonce']).doNothing())
    .returning('id')
    .executeTakeFirst();
  return result !== undefined;
}

/** The highest gas-wallet nonce any intent was signed with, or null. */
export async function highestGasNonce(db: Executor, gasWallet: string): Promise<bigint | null> {
  const row = await db
    .selectFrom('x402_intents')
    .select((eb) => eb.fn.max('gas_nonce').as('n'))
    .where('gas_wallet', '=', gasWallet.toLowerCase())
    .executeTakeFirst();
  return row?.n == null ? null : BigInt(row.n);
}

/**
 * Stores the signed settlement on a VERIFIED intent (SETTLING), before it is broadcast. Answers 'taken' when another
 * intent already holds that gas-wallet nonce (another replica signed at the same nonce: sign again at the next),
 * 'moved' when the intent is no longer VERIFIED.
 */
export async function storeSignedSettlement(
  db: Executor,
  id: string,
  signed: { gasWallet: string; gasNonce: bigint; rawTx: string; txHash: string },
  at: Date,
): Promise<'stored' | 'taken' | 'moved'> {
  assertX402IntentMove('VERIFIED', 'SETTLING');
  try {
    const result = await db
      .updateTable('x402_intents')
      .set({
        state: 'SETTLING',
        gas_wallet: signed.gasWallet.toLowerCase(),
        gas_nonce: signed.gasNonce,
        raw_tx: signed.rawTx,
        tx_hash: signed.txHash.toLowerCase(),
        updated_at: at.toISOString(),
      })
      .where('id', '=', id)
      .where('state', '=', 'VERIFIED')
      .executeTakeFirst();
    return result.numUpdatedRows === 1n ? 'stored' : 'moved';
  } catch (error) {
    if (isUniqueViolation(error)) return 'taken';
    throw error;
  }
}

/** The columns a move may write besides the state. */
export type IntentPatch = Partial<
  Pick<X402IntentRow, 'reason' | 'tx_hash' | 'block_number' | 'block_hash' | 'log_index' | 'credited_micro' | 'posting_id' | 'credited_at'>
>;

/**
 * Moves an intent `from -> to`: a move X402_INTENT_MOVES forbids throws ForbiddenStateMove and writes nothing;
 * otherwise the write is a compare-and-set on `from`: false when the intent was no longer there.
 */
export async function moveIntent(
  db: Executor,
  id: string,
  from: X402IntentState,
  to: X402IntentState,
  patch: IntentPatch,
  at: Date,
): Promise<boolean> {
  assertX402IntentMove(from, to);
  const result = await db
    .updateTable('x402_intents')
    .set({ ...patch, state: to, updated_at: at.toISOString() })
    .where('id', '=', id)
    .where('state', '=', from)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

/** Intents the settlement worker still has to move (signed or mined, not final), least recently touched first. */
export async function openIntents(db: Executor, limit: number): Promise<X402IntentRow[]> {
  return db
    .selectFrom('x402_intents')
    .selectAll()
    .where('state', 'in', ['VERIFIED', 'SETTLING', 'PENDING_FINALITY'])
    .orderBy('updated_at')
    .orderBy('id')
    .limit(limit)
    .execute();
}

export interface IntentPosition {
  createdAt: string;
  id: string;
}

/** An account's top-ups, newest first, after a cursor position. */
export async function intentsOfAccount(
  db: Executor,
  accountId: string,
  after: IntentPosition | null,
  limit: number,
): Promise<X402IntentRow[]> {
  let query = db.selectFrom('x402_intents').selectAll().where('account_id', '=', accountId).where('state', '<>', 'REFUSED');
  if (after) {
    query = query.where((eb) =>
      eb.or([eb('created_at', '<', after.createdAt), eb.and([eb('created_at', '=', after.createdAt), eb('id', '<', after.id)])]),
    );
  }
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
}
