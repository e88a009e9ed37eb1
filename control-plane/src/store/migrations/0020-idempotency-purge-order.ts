import { type Kysely, SqliteAdapter } from 'kysely';

// SQLite: stored idempotent answers lose their created_at index. Every idempotent request writes its answer in its
// effect's transaction, and on SQLite each b-tree it touches is one more page in that commit's WAL frames (two
// writes each, and a copy at the next checkpoint): the index was a third of the answer's cost. The purge walks the
// table in rowid order instead, which is the order answers were stored in (store/idempotency.ts). Postgres keeps
// the index: its purge deletes by it.

const isSqlite = (db: Kysely<any>) => db.getExecutor().adapter instanceof SqliteAdapter;

export async function up(db: Kysely<any>): Promise<void> {
  if (isSqlite(db)) await db.schema.dropIndex('idempotency_keys_created_at').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  if (isSqlite(db)) await db.schema.createIndex('idempotency_keys_created_at').on('idempotency_keys').column('created_at').execute();
}
