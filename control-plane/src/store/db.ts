import SqliteDatabase from 'better-sqlite3';
import {
  Kysely,
  type QueryResult,
  PostgresAdapter,
  PostgresDialect,
  SqliteDialect,
  type SqliteDatabase as SqliteDialectDatabase,
  type Transaction,
} from 'kysely';
import pg from 'pg';
import type { Database } from './schema.js';

export type Dialect = 'sqlite' | 'postgres';

export interface Store {
  readonly db: Kysely<Database>;
  readonly dialect: Dialect;
  close(): Promise<void>;
}

/**
 * Opens one PostgreSQL connection outside the pool, for state that lives on a session (the idempotency claims' advisory
 * locks, the gateway's LISTEN): a new client on each call, since a client whose connection was lost cannot connect
 * again. Built by the composition root (runtime.ts), as the pool is.
 */
export type PostgresConnector = () => pg.Client;

export type Tx = Transaction<Database>;
export type Executor = Kysely<Database> | Tx;

/**
 * The dialect an executor runs on, read from its own Kysely adapter: a store function given the store's Kysely or one
 * of its transactions knows where it runs, so no caller passes the dialect in. `Store.dialect` says the same to the
 * composition root and the edges that choose by it (a listen URL, a batch size).
 */
export function dialectOf(db: Executor): Dialect {
  return db.getExecutor().adapter instanceof PostgresAdapter ? 'postgres' : 'sqlite';
}

/** Does this executor run on PostgreSQL (row locks, NOTIFY, `least`/`greatest`)? SQLite serialises writers instead. */
export const isPostgres = (db: Executor): boolean => dialectOf(db) === 'postgres';

export interface StoreOptions {
  /** postgres:// URL, or null for the embedded SQLite file. */
  databaseUrl: string | null;
  /** SQLite file path (or ':memory:'), used when databaseUrl is null. */
  sqlitePath: string;
  sqliteSynchronous?: 'FULL' | 'NORMAL';
  poolSize?: number;
}

let pgTypesSet = false;
function setPgTypeParsers(): void {
  if (pgTypesSet) return;
  pgTypesSet = true;
  // Every integer leaves the store as bigint on both dialects (SQLite uses safeIntegers), so no code
  // path has to remember which driver it runs on. int8, int4, int2:
  for (const oid of [20, 23, 21]) pg.types.setTypeParser(oid, (v: string) => BigInt(v));
  // numeric: only used for counts and sums, still integral.
  pg.types.setTypeParser(1700, (v: string) => BigInt(v.split('.')[0] ?? v));
}

export function openStore(options: StoreOptions): Store {
  if (options.databaseUrl) {
    setPgTypeParsers();
    const pool = new pg.Pool({ connectionString: options.databaseUrl, max: options.poolSize ?? 10 });
    // A dropped idle connection must not crash the process; the pool replaces it.
    pool.on('error', () => {});
    // Nor may one dropped while checked out (a database restart with requests in flight): the pool's listener hears
    // idle clients only, and a client's 'error' with no listener of its own kills the process. The query on it
    // rejects (the request answers 503, storeUnavailable below) and the pool drops the broken client on release.
    pool.on('connect', (client) => {
      client.on('error', () => {});
    });
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return { db, dialect: 'postgres', close: () => db.destroy() };
  }
  const sqlite = new SqliteDatabase(options.sqlitePath);
  sqlite.defaultSafeIntegers(true);
  sqlite.pragma('journal_mode = WAL');
  // Money uses FULL: a lost posting is worse than a slower one.
  sqlite.pragma(`synchronous = ${options.sqliteSynchronous ?? 'FULL'}`);
  sqlite.pragma('foreign_keys = ON');
  sqlite.pragma('busy_timeout = 5000');
  // Statement journals in memory: a statement that may fail halfway inside a transaction (a group's multi-row upsert,
  // say) keeps the pages it changed so it can be undone alone; past 64 KiB SQLite spilled them to a temp file it
  // created and unlinked each time. At 10,000 agents that was 14-28 files and 800-2,500 page writes a second for
  // nothing a crash needs (test/bench/README.md). Temp tables and sorts stay in memory too; ours are small.
  sqlite.pragma('temp_store = MEMORY');
  // Checkpoint the WAL every 10,000 pages (about 40 MB) instead of SQLite's 1,000: a checkpoint copies the newest
  // version of each page once, so the hot pages every group commit rewrites (telemetry, channel marks, balances) are
  // copied once per 10,000 pages of WAL, not ten times, and the database file is synced a tenth as often. At 10,000
  // agents the checkpoints' writes and syncs fell from 3.4 % to 1.3 % of the control plane's CPU (test/bench/README.md).
  sqlite.pragma(`wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
  const database = withStatementCache(sqlite);
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database }) });
  sqliteConnections.set(db, sqlite);
  sqliteStatementCaches.set(db, database);
  return { db, dialect: 'sqlite', close: () => db.destroy() };
}

/** WAL pages between automatic checkpoints on a SQLite store (openStore). */
export const WAL_AUTOCHECKPOINT_PAGES = 10_000;

/** The better-sqlite3 connection behind each SQLite store this process opened (its writer). */
const sqliteConnections = new WeakMap<Store['db'], SqliteDatabase.Database>();

/** The connection a SQLite store runs its statements on, if openStore opened it. Read-only uses only. */
export const sqliteConnectionOf = (store: Pick<Store, 'db'>): SqliteDatabase.Database | undefined => sqliteConnections.get(store.db);

/** The statement cache in front of each SQLite store's connection (withStatementCache), which counts writes. */
const sqliteStatementCaches = new WeakMap<Store['db'], SqliteDialectDatabase>();

/**
 * A write run synchronously on a SQLite store's own connection, for a hot path where Kysely's promise chain costs
 * more than the statement: the statement is prepared once (the store's statement cache) and counted as every
 * Kysely statement is (sqliteWritesTo). It may run only inside a transaction the caller holds on that store (a use
 * case's work or commit hook): the store has one connection, on which Kysely runs one transaction at a time, so the
 * statement joins the caller's own transaction. Outside any transaction it throws rather than commit on its own
 * (which transaction is open is the caller's to know: it cannot be told from here). Undefined on Postgres, or for a
 * store openStore did not open.
 */
export function sqliteTransactionWrite(store: Pick<Store, 'db'>): ((sqlText: string, parameters: readonly unknown[]) => void) | undefined {
  const connection = sqliteConnections.get(store.db);
  const statements = sqliteStatementCaches.get(store.db);
  if (!connection || !statements) return undefined;
  return (sqlText, parameters) => {
    if (!connection.inTransaction) throw new Error('sqliteTransactionWrite runs only inside a transaction on its store');
    (statements.prepare(sqlText) as unknown as SqliteDatabase.Statement).run(...parameters);
  };
}

/** Transactions of SQLite stores, with their store's Kysely, while they are open (withSqliteTransaction). */
const openSqliteTransactions = new WeakMap<Tx, Store['db']>();

/**
 * Marks `trx` as a transaction of the SQLite store `store` for as long as `work` runs (store/transaction.ts does it
 * for every use case's transaction), so statements compiled once run on the store's connection synchronously inside
 * it (sqliteRunNow). A transaction not marked runs its statements through Kysely, as before.
 */
export async function withSqliteTransaction<T>(store: Pick<Store, 'db'>, trx: Tx, work: (trx: Tx) => Promise<T>): Promise<T> {
  if (!sqliteConnections.has(store.db)) return work(trx);
  openSqliteTransactions.set(trx, store.db);
  try {
    return await work(trx);
  } finally {
    openSqliteTransactions.delete(trx);
  }
}

/**
 * A statement run synchronously on a SQLite store's own connection (through its statement cache, so writes are
 * counted as Kysely's are), for the hot paths' statements compiled once (store/compiled.ts), where Kysely's promise
 * chain and connection mutex cost more than the statement. Answers what Kysely's SQLite driver would (rows for a
 * read, the changes and last row id for a write), or undefined when it cannot run so, and the caller runs it through
 * Kysely:
 * - given the store's Kysely (outside any transaction): only reads, and only while no transaction is open on the
 *   connection (the read could see that transaction's rows before they commit, or after a rollback never; Kysely
 *   waits for it). Otherwise it sees exactly what Kysely would, the committed rows: JavaScript runs one statement at
 *   a time, so no transaction can open during the read.
 * - given a transaction marked by withSqliteTransaction: any statement, inside it (the connection is in it: the
 *   store has one connection, on which Kysely runs one transaction at a time).
 * - anything else (Postgres, a store openStore did not open, a transaction not marked): undefined.
 */
export function sqliteRunNow<R>(db: Executor, sqlText: string, parameters: readonly unknown[]): QueryResult<R> | undefined {
  const inTransaction = openSqliteTransactions.get(db as Tx);
  const root = inTransaction ?? (db as Store['db']);
  const connection = sqliteConnections.get(root);
  if (!connection || connection.inTransaction !== (inTransaction !== undefined)) return undefined;
  if (!inTransaction && !READ_ONLY.test(sqlText)) return undefined;
  const statement = sqliteStatementCaches.get(root)?.prepare(sqlText) as unknown as SqliteDatabase.Statement | undefined;
  if (!statement) return undefined;
  if (statement.reader) return { rows: statement.all(...parameters) as R[] };
  const { changes, lastInsertRowid } = statement.run(...parameters);
  return { rows: [], numAffectedRows: BigInt(changes), insertId: BigInt(lastInsertRowid) };
}

/** Bumped by every statement other than a read that this process runs on a SQLite store (see sqliteWrites). */
let sqliteWriteCount = 0;
const READ_ONLY = /^\s*select\b/i;
/** Writes per table (see sqliteWritesTo), and statements whose table is not known, which count for every table. */
const tableWriteCounts = new Map<string, number>();
let unknownWriteCount = 0;
const WRITE_TARGET = /^\s*(?:(?:insert|replace)(?:\s+or\s+\w+)?\s+into|update(?:\s+or\s+\w+)?|delete\s+from)\s+"?([A-Za-z_]\w*)"?\s/i;
const TRANSACTION_CONTROL = /^\s*(begin|commit|end|rollback|savepoint|release)\b/i;
const TRANSACTION_END = /^\s*(?:commit|end|rollback(?!\s+(?:transaction\s+)?to\b))\b/i;

const countWriteTo = (table: string) => tableWriteCounts.set(table, (tableWriteCounts.get(table) ?? 0) + 1);

/**
 * How many times a statement of this process may have changed one of `tables` on a SQLite store, as a generation:
 * unchanged since a moment means no commit of this process has touched those tables since. A write to a table counts
 * when it is prepared (right before it runs: an autocommit write is committed in the same synchronous step) and
 * again at the end of its transaction (commit, rollback, a savepoint's release), so a reader that cached the old
 * row while the transaction was open learns of its commit. A statement whose target the simple parse below does not
 * recognise (DDL, pragmas, CTEs) counts for every table. Writes that reach a table through a foreign key action or a
 * trigger are not seen here: callers name tables that no other table's write can reach that way (the credential
 * cache's test checks the schema for it).
 */
export function sqliteWritesTo(tables: readonly string[]): number {
  let total = unknownWriteCount;
  for (const table of tables) total += tableWriteCounts.get(table) ?? 0;
  return total;
}

/**
 * How many statements other than plain reads (writes, commits, rollbacks) this process has run on its SQLite stores:
 * unchanged since a moment means nothing this process did has committed since. The credential cache reads it on
 * every request instead of asking the file (accounts-credential-cache.ts). Counted when a statement is prepared,
 * which Kysely does right before running it, in the same synchronous step.
 */
export const sqliteWrites = (): number => sqliteWriteCount;

/** Most prepared statements kept per SQLite connection; the least recently prepared goes first. */
const STATEMENT_CACHE_SIZE = 512;

/**
 * What a transaction begins with on SQLite, in place of Kysely's plain `begin`. A deferred transaction that reads and
 * then writes, while another process (an `ark-cp` command beside the server) commits in between, fails at its first
 * write with SQLITE_BUSY at once: its snapshot is stale, and SQLite does not wait on the busy timeout for that. Taking
 * the write lock when the transaction begins makes it wait there instead, up to busy_timeout. A store's own
 * transactions are unaffected: Kysely runs them one at a time on its one connection. Read-only transactions now hold
 * the write lock too, so another writer on the file waits for them as well.
 */
const BEGIN_WRITE = 'begin immediate';

/**
 * Kysely prepares every query anew on SQLite, and preparing (parsing and planning) costs about as much as running a
 * small statement. The same SQL text gets the same prepared statement back instead; a statement still being iterated
 * (a stream) is never handed out twice. SQLite re-prepares a cached statement itself after a schema change.
 */
function withStatementCache(sqlite: SqliteDatabase.Database): SqliteDialectDatabase {
  const cache = new Map<string, SqliteDatabase.Statement>();
  // Tables written in this connection's open transaction: counted again when it ends.
  const pending = new Set<string>();
  let pendingUnknown = false;
  const countWrite = (sqlText: string) => {
    sqliteWriteCount++;
    const control = TRANSACTION_CONTROL.exec(sqlText);
    if (control) {
      for (const table of pending) countWriteTo(table);
      if (pendingUnknown) unknownWriteCount++;
      if (TRANSACTION_END.test(sqlText)) {
        pending.clear();
        pendingUnknown = false;
      }
      return;
    }
    const table = WRITE_TARGET.exec(sqlText)?.[1]?.toLowerCase();
    if (table === undefined) {
      unknownWriteCount++;
      if (sqlite.inTransaction) pendingUnknown = true;
    } else {
      countWriteTo(table);
      if (sqlite.inTransaction) pending.add(table);
    }
  };
  return {
    close: () => sqlite.close(),
    prepare(kyselyText: string) {
      const sqlText = kyselyText === 'begin' ? BEGIN_WRITE : kyselyText;
      if (!READ_ONLY.test(sqlText)) countWrite(sqlText);
      const cached = cache.get(sqlText);
      if (cached && !cached.busy) return cached;
      const statement = sqlite.prepare(sqlText);
      if (!cached) {
        if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value as string);
        cache.set(sqlText, statement);
      }
      return statement;
    },
  };
}

/** Booleans are stored as 0/1 integers on both dialects. */
export const toBool = (value: bigint | number | boolean | null | undefined): boolean => value === true || value === 1n || value === 1;
export const fromBool = (value: boolean): bigint => (value ? 1n : 0n);

/** JSON is stored as text on both dialects. */
export const toJson = (value: unknown): string => JSON.stringify(value);
export const fromJson = <T>(value: string | null | undefined): T | null => (value == null ? null : (JSON.parse(value) as T));

/** Is this error a unique-constraint violation, on either dialect? */
export function isUniqueViolation(error: unknown): boolean {
  const e = error as { code?: string } | null;
  return e?.code === '23505' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/** Is this a transient conflict worth retrying (serialization failure, deadlock, busy SQLite)? */
export function isRetryableConflict(error: unknown): boolean {
  const e = error as { code?: string } | null;
  // 55P03 lock_not_available: a NOWAIT lock held elsewhere (store/ledger.ts, lockAccounts).
  return e?.code === '40001' || e?.code === '40P01' || e?.code === '55P03' || e?.code === 'SQLITE_BUSY';
}

// SQLSTATE classes and codes that say the database is not there right now, not that the request is wrong: 08
// connection exception, 57P01-57P03 admin shutdown, crash shutdown and "cannot connect now" (starting up), 53300
// too many connections.
const UNAVAILABLE_SQLSTATE = /^(08[0-9A-Z]{3}|57P0[123]|53300)$/;
const UNAVAILABLE_ERRNO = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND']);
// node-postgres reports a socket that closed under a query with these messages and no code.
const UNAVAILABLE_MESSAGE = /^(Connection terminated|Client has encountered a connection error|timeout exceeded when trying to connect)/;

/**
 * True when an error means the store could not be reached (a PostgreSQL restart, failover or a full connection
 * table), so the request may be retried as it is: the HTTP layer answers 503 UNAVAILABLE with `retryable: true`
 * instead of 500. Follows `cause` (Kysely and our transaction helpers may wrap the driver's error).
 */
export function storeUnavailable(error: unknown): boolean {
  for (let current = error, depth = 0; current instanceof Error && depth < 5; current = current.cause, depth++) {
    const code = (current as Error & { code?: unknown }).code;
    if (typeof code === 'string' && (UNAVAILABLE_SQLSTATE.test(code) || UNAVAILABLE_ERRNO.has(code))) return true;
    if (UNAVAILABLE_MESSAGE.test(current.message)) return true;
  }
  return false;
}
