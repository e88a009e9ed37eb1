import SqliteDatabase from 'better-sqlite3';
import { closeSync, openSync, readSync } from 'node:fs';
import { CompiledQuery, sql } from 'kysely';
import { decodeScopes } from '../domain/accounts/account.js';
import { type CredentialKind, type Scope, type StepUpKind, sessionScopes } from '../domain/accounts/principal.js';
import type { AccountRow } from './accounts.js';
import { type Store, sqliteConnectionOf, sqliteWritesTo, toBool } from './db.js';

// The authenticator's read path: one credential row joined with its account, by the hash of its secret. On SQLite
// it has a connection of its own and a cache; on Postgres it runs SQL compiled once.

/** The tables a credential row is read from: only writes to these can change a cached entry. */
export const CREDENTIAL_TABLES = ['accounts', 'api_keys', 'sessions'] as const;

export type CredentialRow = AccountRow & {
  credential_id: string;
  credential_expires_at: string | null;
  credential_revoked_at: string | null;
  credential_step_up_method: StepUpKind | null;
  credential_step_up_until: string | null;
  credential_scopes: string | null;
  credential_last_used_at: string | null;
};

/** A credential row with what every request derives from it, decoded once (times as epoch ms). */
export interface CachedCredential {
  row: CredentialRow;
  scopes: ReadonlySet<Scope>;
  revoked: boolean;
  /** Infinity when the credential never expires. */
  expiresAtMs: number;
  stepUpUntilMs: number | null;
  lastUsedMs: number | null;
  /** When it was read: entries older than CREDENTIAL_CACHE_TTL_MS are read again. */
  readAtMs: number;
}

/** Synchronous on SQLite (better-sqlite3 reads block anyway), a promise on Postgres. */
export type CredentialLookup = (
  kind: CredentialKind,
  hash: string,
  nowMs: number,
) => CachedCredential | undefined | Promise<CachedCredential | undefined>;
export type CredentialLookupHandle = { lookup: CredentialLookup; close(): void };

/**
 * Verified credentials kept in memory on SQLite (see openCredentialLookup): at most this many of each kind (sessions,
 * API keys), for at most this long.
 */
const CREDENTIAL_CACHE_MAX = 4096;
const CREDENTIAL_CACHE_TTL_MS = 2_000;
/**
 * How often, at most, the file is asked whether another process (the CLI) has committed: a revocation there is
 * refused from at most this long after its commit, as if the request had been read that much earlier.
 */
const FOREIGN_COMMIT_CHECK_MS = 1;

/** The two lookups as SQL text, built once by Kysely so both paths read the same columns. */
function credentialQueries(db: Store['db']) {
  const session = db
    .selectFrom('sessions')
    .innerJoin('accounts', 'accounts.id', 'sessions.account_id')
    .selectAll('accounts')
    .select([
      'sessions.id as credential_id',
      'sessions.expires_at as credential_expires_at',
      'sessions.revoked_at as credential_revoked_at',
      'sessions.step_up_method as credential_step_up_method',
      'sessions.step_up_until as credential_step_up_until',
      sql<null>`null`.as('credential_scopes'),
      sql<null>`null`.as('credential_last_used_at'),
    ])
    .where('sessions.token_hash', '=', '')
    .compile().sql;
  const apiKey = db
    .selectFrom('api_keys')
    .innerJoin('accounts', 'accounts.id', 'api_keys.account_id')
    .selectAll('accounts')
    .select([
      'api_keys.id as credential_id',
      'api_keys.expires_at as credential_expires_at',
      'api_keys.revoked_at as credential_revoked_at',
      'api_keys.step_up_method as credential_step_up_method',
      'api_keys.step_up_until as credential_step_up_until',
      'api_keys.scopes as credential_scopes',
      'api_keys.last_used_at as credential_last_used_at',
    ])
    .where('api_keys.secret_hash', '=', '')
    .compile().sql;
  return { session, apiKey };
}

const decoded = (kind: CredentialKind, row: CredentialRow, nowMs: number): CachedCredential => ({
  row,
  scopes:
    kind === 'session'
      ? sessionScopes({ role: row.role, hostEnabled: toBool(row.host_enabled) })
      : new Set<Scope>(decodeScopes(row.credential_scopes ?? '')),
  revoked: row.credential_revoked_at !== null,
  expiresAtMs: row.credential_expires_at === null ? Number.POSITIVE_INFINITY : Date.parse(row.credential_expires_at),
  stepUpUntilMs:
    row.credential_step_up_method === null || row.credential_step_up_until === null ? null : Date.parse(row.credential_step_up_until),
  lastUsedMs: row.credential_last_used_at === null ? null : Date.parse(row.credential_last_used_at),
  readAtMs: nowMs,
});

/** Bytes of the WAL-index header's first copy (SQLite's file format, "The WAL-Index Format"). */
const WAL_INDEX_HEADER_BYTES = 48;

/**
 * A cheap "has anything committed?" signal for a database in WAL mode: the first copy of the WAL-index header at the
 * start of the `-shm` file, which every commit of every connection and process rewrites (its change counter, the
 * last frame and the frame checksum; a WAL restart changes the salts too), read with one pread and compared with the
 * last read. It is what `PRAGMA data_version` itself consults, without opening a read transaction (two lock calls
 * and the pager's bookkeeping, about three times the cost). Any difference (a torn read included) counts as a
 * change, so it can only invalidate too often, never too rarely. Null when there is no `-shm` file (not WAL mode):
 * the caller asks `data_version` then.
 */
function walIndexChanges(file: string): { changed(): boolean; close(): void } | null {
  let fd: number;
  try {
    fd = openSync(`${file}-shm`, 'r');
  } catch {
    return null;
  }
  const seen = Buffer.alloc(WAL_INDEX_HEADER_BYTES);
  const now = Buffer.alloc(WAL_INDEX_HEADER_BYTES);
  let valid = false;
  return {
    changed() {
      const read = readSync(fd, now, 0, WAL_INDEX_HEADER_BYTES, 0);
      if (valid && read === WAL_INDEX_HEADER_BYTES && now.equals(seen)) return false;
      now.copy(seen);
      valid = read === WAL_INDEX_HEADER_BYTES;
      return true;
    },
    close: () => closeSync(fd),
  };
}

/**
 * On SQLite the lookup runs on a dedicated connection with statements prepared once (Kysely prepares every
 * statement anew, which costs more than the read itself), and found rows are cached: an entry is used only while
 * nothing that could change it has committed since it was read. This process's own writes to the tables the row is
 * read from (CREDENTIAL_TABLES, any store it opened) are counted in memory (`sqliteWritesTo`, store/db.ts), so a
 * revocation, step-up, verification or any other such write made here is seen by the very next request, exactly as
 * without the cache, at no system call; its other writes (ledger postings, stored answers, heartbeats...) leave the
 * cache alone. Commits of other connections and processes (the CLI) are asked for at most every
 * FOREIGN_COMMIT_CHECK_MS: the WAL-index header first (`walIndexChanges`: has anything committed at all? one pread),
 * and only after some commit `PRAGMA data_version` of the store's own connection, which changes only when another
 * connection has committed (the cache is dropped while that connection is inside a transaction); for a store opened
 * elsewhere, the WAL-index header alone (any commit) or the lookup connection's `data_version`.
 * Expiry and step-up freshness are still compared with `now` on every request;
 * unknown tokens are never cached. The TTL and size bound only limit memory and how long a token's hash stays there.
 * On Postgres the lookup runs the SQL compiled once and nothing is cached: other replicas write the same rows and
 * there is no cheap way to learn of it, so a cache would let a revoked key work on until it lapsed.
 */
export async function openCredentialLookup(store: Store, options: { foreignCommitCheckMs?: number } = {}): Promise<CredentialLookupHandle> {
  const foreignCommitCheckMs = options.foreignCommitCheckMs ?? FOREIGN_COMMIT_CHECK_MS;
  const text = credentialQueries(store.db);
  if (store.dialect === 'sqlite') {
    const list = await sql<{ name: string; file: string }>`pragma database_list`.execute(store.db);
    const file = list.rows.find((row) => row.name === 'main')?.file;
    if (file) {
      const connection = new SqliteDatabase(file, { fileMustExist: true });
      connection.defaultSafeIntegers(true);
      connection.pragma('busy_timeout = 5000');
      const statements = { session: connection.prepare(text.session), 'api-key': connection.prepare(text.apiKey) };
      // Commits of other connections and processes: the store's own connection (the writer) tells them apart from
      // its own with `PRAGMA data_version`, which changes only when another connection has committed. While that
      // connection is inside a transaction its answer can lag (it keeps its snapshot), so the cache is dropped
      // instead. The WAL-index header (`walIndexChanges`: one pread) is read first: while it is unchanged nothing has
      // committed at all, and `data_version`, which opens a read transaction (lock calls and the pager's
      // bookkeeping, three times the cost), is asked only after some commit. Without the store's connection (a store
      // opened elsewhere), the WAL-index header alone (any commit at all).
      const writer = sqliteConnectionOf(store);
      const walIndex = walIndexChanges(file);
      const dataVersion = (writer ?? connection).prepare('pragma data_version').pluck();
      let cachedAtVersion: unknown = null;
      const versionChanged = () => {
        const version = dataVersion.get();
        if (version === cachedAtVersion) return false;
        cachedAtVersion = version;
        return true;
      };
      const fileChanged = writer
        ? () => {
            if (writer.inTransaction) {
              cachedAtVersion = null;
              return true;
            }
            // Nothing committed since the last look: no need to ask which connection did. (A changed or torn header
            // only sends the question on to data_version.)
            if (walIndex && !walIndex.changed()) return false;
            return versionChanged();
          }
        : walIndex
          ? () => walIndex.changed()
          : versionChanged;
      // This process's own writes to the credential tables are counted in memory (exact, no system call); other
      // connections' commits are asked for at most every FOREIGN_COMMIT_CHECK_MS.
      let writesSeen = -1;
      let fileCheckedAt = Number.NEGATIVE_INFINITY;
      const changed = () => {
        const writes = sqliteWritesTo(CREDENTIAL_TABLES);
        const now = performance.now();
        let dirty = writes !== writesSeen;
        writesSeen = writes;
        if (now - fileCheckedAt >= foreignCommitCheckMs) {
          fileCheckedAt = now;
          dirty = fileChanged() || dirty;
        }
        return dirty;
      };
      // The kinds live in different tables: one map each, keyed by the hash as it is (no key string built per request).
      const caches = { session: new Map<string, CachedCredential>(), 'api-key': new Map<string, CachedCredential>() };
      return {
        lookup: (kind, hash, nowMs) => {
          if (changed()) {
            caches.session.clear();
            caches['api-key'].clear();
          }
          const cache = caches[kind];
          const hit = cache.get(hash);
          if (hit && nowMs >= hit.readAtMs && nowMs - hit.readAtMs < CREDENTIAL_CACHE_TTL_MS) return hit;
          if (hit) cache.delete(hash);
          const row = statements[kind].get(hash) as CredentialRow | undefined;
          if (!row) return undefined;
          const entry = decoded(kind, row, nowMs);
          // Oldest first out: Maps iterate in insertion order.
          if (cache.size >= CREDENTIAL_CACHE_MAX) cache.delete(cache.keys().next().value as string);
          cache.set(hash, entry);
          return entry;
        },
        close: () => {
          walIndex?.close();
          connection.close();
        },
      };
    }
  }
  const compiled = { session: text.session, 'api-key': text.apiKey };
  return {
    lookup: async (kind, hash, nowMs) => {
      const row = (await store.db.executeQuery<CredentialRow>(CompiledQuery.raw(compiled[kind], [hash]))).rows[0];
      return row && decoded(kind, row, nowMs);
    },
    close: () => {},
  };
}
