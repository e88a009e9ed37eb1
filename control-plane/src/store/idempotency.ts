import { CompiledQuery, type Selectable } from 'kysely';
import {
  type Dialect,
  dialectOf,
  type Executor,
  isPostgres,
  type Store,
  sqliteConnectionOf,
  sqliteTransactionWrite,
  type Tx,
} from './db.js';
import type { IdempotencyKeysTable } from './tables/foundation.js';

/** Keys are kept at least 24 hours; the purge worker removes older ones. */
export const IDEMPOTENCY_RETENTION_MS = 48 * 3_600_000;

export type StoredAnswer = Selectable<IdempotencyKeysTable>;

/** A key's identity: scoped to the principal and the route. */
export interface IdempotencyKeyId {
  principal: string;
  route: string;
  key: string;
}

const ANSWER_COLUMNS = [
  'principal',
  'route',
  'key',
  'request_hash',
  'state',
  'status_code',
  'response_body',
  'locked_until',
  'created_at',
] as const satisfies ReadonlyArray<keyof IdempotencyKeysTable>;

/** Statements built once: Kysely would compile the same query on every request. */
const FIND_SQL = 'select * from idempotency_keys where principal = $1 and route = $2 and key = $3';
const FIND_SQL_SQLITE = 'select * from idempotency_keys where principal = ? and route = ? and key = ?';
const insertSql = new Map<string, string>();

/**
 * `insert ... values (...), (...)` for `rows` rows. A key's answer is written once: a second writer for the same key
 * (a twin whose effect lost the race) fails with a unique violation, which rolls its effect back.
 */
function answerInsert(rows: number, dialect: Dialect): string {
  const id = `${dialect}:${rows}`;
  let text = insertSql.get(id);
  if (text === undefined) {
    let n = 0;
    const placeholder = () => (dialect === 'postgres' ? `$${++n}` : '?');
    const tuples = Array.from({ length: rows }, () => `(${ANSWER_COLUMNS.map(placeholder).join(', ')})`);
    text = `insert into idempotency_keys (${ANSWER_COLUMNS.join(', ')}) values ${tuples.join(', ')}`;
    insertSql.set(id, text);
  }
  return text;
}

/** The stored answer of a key, if its request has completed. */
export async function findStoredAnswer(db: Executor, id: IdempotencyKeyId): Promise<StoredAnswer | undefined> {
  const sqlText = isPostgres(db) ? FIND_SQL : FIND_SQL_SQLITE;
  const result = await db.executeQuery<StoredAnswer>(CompiledQuery.raw(sqlText, [id.principal, id.route, id.key]));
  return result.rows[0];
}

/**
 * On SQLite, the same lookup run synchronously on the store's own connection with a statement prepared once: no
 * promise, no wait for Kysely's connection mutex. It may run while another request's transaction is open on that
 * connection and so see that transaction's rows before they commit; the caller holds the key's claim, so no open
 * transaction can be writing this key's answer (a twin's is committed before its claim is given back). Null on
 * Postgres, or for a store openStore did not open.
 */
export function storedAnswerReader(store: Store): ((id: IdempotencyKeyId) => StoredAnswer | undefined) | null {
  const connection = store.dialect === 'sqlite' ? sqliteConnectionOf(store) : undefined;
  if (!connection) return null;
  const statement = connection.prepare(FIND_SQL_SQLITE);
  return (id) => statement.get(id.principal, id.route, id.key) as StoredAnswer | undefined;
}

/**
 * On SQLite, the insert of one answer run synchronously inside the use case's transaction on the store's connection
 * (sqliteTransactionWrite): the same row and the same unique violation as insertStoredAnswers, without Kysely's
 * promises (about a third of the insert's cost on the idempotent POST). Null on Postgres.
 */
export function storedAnswerInserter(store: Store): ((row: StoredAnswer) => void) | null {
  const write = store.dialect === 'sqlite' ? sqliteTransactionWrite(store) : undefined;
  if (!write) return null;
  const text = answerInsert(1, 'sqlite');
  return (row) =>
    write(
      text,
      ANSWER_COLUMNS.map((column) => row[column]),
    );
}

/**
 * Writes answers (a key that already has one: unique violation). Called inside a use case's
 * transaction (the answer commits with the effect) or, for answers that have no effect to go with (refusals), alone.
 */
export async function insertStoredAnswers(db: Executor, rows: readonly StoredAnswer[]): Promise<void> {
  if (rows.length === 0) return;
  const parameters = rows.flatMap((row) => ANSWER_COLUMNS.map((column) => row[column]));
  await db.executeQuery(CompiledQuery.raw(answerInsert(rows.length, dialectOf(db)), parameters));
}

/** Rows one purge step reads and deletes at most, so that a large backlog never holds the store for long. */
const PURGE_BATCH = 2_000;

/**
 * Worker step: forget keys older than the retention, in batches of at most PURGE_BATCH rows (each its own
 * transaction, the event loop served between them). Returns how many were deleted.
 *
 * SQLite keeps no index on created_at: each stored answer would write one more b-tree page in its effect's commit,
 * the costliest part of an idempotent request there. Rows are appended in rowid order, the order they were stored
 * in, so the oldest come first: each batch reads the next oldest rows and deletes the run of them that is past the
 * retention, and the purge stops at the first row that is not. A row stored with an earlier created_at after a later
 * one (the wall clock stepped back) is kept until the rows before it have aged out: later than its time, never
 * earlier. Postgres deletes by its created_at index.
 */
export async function purgeIdempotencyKeys(store: Store, now: Date, options: { batch?: number } = {}): Promise<number> {
  const cutoff = new Date(now.getTime() - IDEMPOTENCY_RETENTION_MS).toISOString();
  const batch = Math.max(1, options.batch ?? PURGE_BATCH);
  const step = store.dialect === 'postgres' ? purgeStepByIndex : purgeStepInStorageOrder;
  let deleted = 0;
  for (;;) {
    const count = await store.db.transaction().execute((trx) => step(trx, cutoff, batch));
    deleted += count;
    if (count < batch) return deleted;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** Postgres: up to `batch` answers older than the cutoff, by the created_at index. */
async function purgeStepByIndex(trx: Tx, cutoff: string, batch: number): Promise<number> {
  const result = await trx.executeQuery(
    CompiledQuery.raw(
      `delete from idempotency_keys where (principal, route, key) in (
         select principal, route, key from idempotency_keys where created_at < $1 order by created_at limit $2)`,
      [cutoff, batch],
    ),
  );
  return Number(result.numAffectedRows ?? 0n);
}

/** SQLite: of the `batch` oldest answers (rowid order), the run of them past the cutoff. */
async function purgeStepInStorageOrder(trx: Tx, cutoff: string, batch: number): Promise<number> {
  const oldest = await trx.executeQuery<{ rowid: bigint; created_at: string }>(
    CompiledQuery.raw('select rowid, created_at from idempotency_keys order by rowid limit ?', [batch]),
  );
  let last: bigint | null = null;
  let count = 0;
  for (const row of oldest.rows) {
    if (row.created_at >= cutoff) break;
    last = row.rowid;
    count++;
  }
  if (last !== null) await trx.executeQuery(CompiledQuery.raw('delete from idempotency_keys where rowid <= ?', [last]));
  return count;
}
