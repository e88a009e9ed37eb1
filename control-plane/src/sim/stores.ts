import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Dialect, openStore, type Store } from '../store/db.js';
import { migrateToLatest } from '../store/migrate.js';
import { createTestStore, type TestStore } from '../testing/stores.js';
import { sql } from 'kysely';

// One fresh database per simulated run, cheaply: a sequence is short, so creating and migrating a database for each
// would cost more than the run. SQLite copies a migrated template file (in /dev/shm where there is one); PostgreSQL
// keeps one migrated database per process and empties it between runs (DELETE, then the rows the migrations seeded
// are put back).

export interface RunStores {
  readonly dialect: Dialect;
  /** A store no other run has touched. */
  fresh(): Promise<Store>;
  /** Done with a run's store (its file is removed; the PostgreSQL database is kept for the next run). */
  release(store: Store): Promise<void>;
  close(): Promise<void>;
}

export async function runStores(dialect: Dialect): Promise<RunStores> {
  return dialect === 'sqlite' ? sqliteStores() : postgresStores();
}

async function sqliteStores(): Promise<RunStores> {
  const dir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'ark-sim-'));
  const template = join(dir, 'template.sqlite');
  const migrated = openStore({ databaseUrl: null, sqlitePath: template, sqliteSynchronous: 'NORMAL' });
  await migrateToLatest(migrated);
  // Closing checkpoints the write-ahead log into the file, so the copy holds every migration.
  await migrated.close();
  let runs = 0;
  const paths = new Map<Store, string>();
  return {
    dialect: 'sqlite',
    async fresh() {
      const path = join(dir, `run-${runs++}.sqlite`);
      copyFileSync(template, path);
      const store = openStore({ databaseUrl: null, sqlitePath: path, sqliteSynchronous: 'NORMAL' });
      paths.set(store, path);
      return store;
    },
    async release(store) {
      await store.close();
      const path = paths.get(store);
      paths.delete(store);
      if (path) for (const file of [path, `${path}-wal`, `${path}-shm`]) rmSync(file, { force: true });
    },
    async close() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function postgresStores(): Promise<RunStores> {
  const base: TestStore = await createTestStore('postgres');
  const tables = (
    await sql<{ name: string }>`select table_name as name from information_schema.tables
      where table_schema = 'public' and table_type = 'BASE TABLE' and table_name not like 'kysely_%'`.execute(base.db)
  ).rows.map((r) => r.name);
  // What the migrations seeded (singleton rows such as the admission switch), to put back after each TRUNCATE.
  const seeded: Array<{ table: string; rows: Record<string, unknown>[] }> = [];
  for (const table of tables) {
    const rows = (await sql<Record<string, unknown>>`select * from ${sql.table(table)}`.execute(base.db)).rows;
    if (rows.length > 0) seeded.push({ table, rows });
  }
  return {
    dialect: 'postgres',
    async fresh() {
      // DELETE rather than TRUNCATE: a run leaves a few rows, and TRUNCATE of every table costs seconds. Triggers
      // (the immutable tables refuse DELETE) and foreign keys are off for this one transaction.
      await base.db.transaction().execute(async (trx) => {
        await sql`set local session_replication_role = replica`.execute(trx);
        for (const table of tables) await sql`delete from ${sql.table(table)}`.execute(trx);
        for (const { table, rows } of seeded)
          await trx
            .insertInto(table as never)
            .values(rows as never)
            .execute();
      });
      // The same pool for every run; a crash in the simulation rebuilds the services, not the database.
      return { db: base.db, dialect: 'postgres', close: async () => {} };
    },
    async release() {},
    async close() {
      await base.destroy();
    },
  };
}
