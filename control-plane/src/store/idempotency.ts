import { CompiledQuery, type Selectable } from 'kysely';
import { type Dialect, type Executor, type Store, sqliteConnectionOf } from './db.js';
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
export async function findStoredAnswer(db: Executor, dialect: Dialect, id: IdempotencyKeyId): Promise<StoredAnswer | undefined> {
  const sqlText = dialect === 'postgres' ? FIND_SQL : FIND_SQL_SQLITE;
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
 * Writes answers (a key that already has one: unique violation). Called inside a use case's
 * transaction (the answer commits with the effect) or, for answers that have no effect to go with (refusals), alone.
 */
export async function insertStoredAnswers(db: Executor, dialect: Dialect, rows: readonly StoredAnswer[]): Promise<void> {
  if (rows.length === 0) return;
  const parameters = rows.flatMap((row) => ANSWER_COLUMNS.map((column) => row[column]));
  await db.executeQuery(CompiledQuery.raw(answerInsert(rows.length, dialect), parameters));
}

/** Worker step: forget keys older than the retention. */
export async function purgeIdempotencyKeys(store: Store, now: Date): Promise<number> {
  const result = await store.db
    .deleteFrom('idempotency_keys')
    .where('created_at', '<', new Date(now.getTime() - IDEMPOTENCY_RETENTION_MS).toISOString())
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
