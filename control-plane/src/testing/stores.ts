import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { type Dialect, openStore, type Store } from '../store/db.js';
import { migrateToLatest } from '../store/migrate.js';

/** Every store-level test runs on both dialects (the Kysely way: one suite proves both stores). */
export const DIALECTS: readonly Dialect[] = ['sqlite', 'postgres'];

/** The server tests create throwaway databases on. Trust auth on our machines and CI. */
export const POSTGRES_ADMIN_URL = process.env.ARK_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface TestStore extends Store {
  /** The URL of the throwaway Postgres database, or the SQLite file path. */
  location: string;
  /** Closes the store and removes its database or file. */
  destroy(): Promise<void>;
}

/** A fresh, migrated store: a new SQLite file, or a new Postgres database dropped afterwards. */
export async function createTestStore(dialect: Dialect, options: { sqliteSynchronous?: 'FULL' | 'NORMAL' } = {}): Promise<TestStore> {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'ark-store-'));
    const path = join(dir, 'ark.sqlite');
    const store = openStore({ databaseUrl: null, sqlitePath: path, sqliteSynchronous: options.sqliteSynchronous ?? 'NORMAL' });
    await migrateToLatest(store);
    return {
      ...store,
      location: path,
      async destroy() {
        await store.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const name = `ark_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = `/${name}`;
  const store = openStore({ databaseUrl: url.toString(), sqlitePath: '', poolSize: 20 });
  await migrateToLatest(store);
  return {
    ...store,
    location: url.toString(),
    async destroy() {
      await store.close();
      const drop = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
      await drop.connect();
      await drop.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await drop.end();
    },
  };
}
