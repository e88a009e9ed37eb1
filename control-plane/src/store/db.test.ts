import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readlinkSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestStore, DIALECTS, type TestStore } from '../testing/stores.js';
import { sqliteConnectionOf, WAL_AUTOCHECKPOINT_PAGES } from './db.js';

describe.each(DIALECTS)('store on %s', (dialect) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await createTestStore(dialect);
  });
  afterAll(async () => {
    await store.destroy();
  });

  it('returns integers as bigint on every dialect', async () => {
    const row = await sql<{ n: bigint }>`select 9007199254740993 as n`.execute(store.db);
    expect(row.rows[0]?.n).toBe(9007199254740993n);
  });

  it('has the foundation tables', async () => {
    await store.db
      .insertInto('audit_log')
      .values({ id: 'a', at: '2026-01-01T00:00:00.000Z', actor_account_id: null, action: 'test', subject: null, detail: '{}' })
      .execute();
    const rows = await store.db.selectFrom('audit_log').selectAll().execute();
    expect(rows).toHaveLength(1);
  });

  it.runIf(dialect === 'sqlite')('opens SQLite in WAL mode, checkpointing every WAL_AUTOCHECKPOINT_PAGES', () => {
    const connection = sqliteConnectionOf(store);
    expect(connection?.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(connection?.pragma('wal_autocheckpoint', { simple: true })).toBe(BigInt(WAL_AUTOCHECKPOINT_PAGES));
  });

  // Linux names a process's open files in /proc/self/fd; SQLite's temp files are "etilqs_...", unlinked once opened.
  it.runIf(dialect === 'sqlite' && process.platform === 'linux')(
    'keeps a statement journal in memory: a many-page statement in a transaction opens no temp file',
    () => {
      const connection = sqliteConnectionOf(store);
      if (!connection) throw new Error('a SQLite store has its connection');
      connection.exec('create table statement_journal_probe (id integer primary key, v text not null unique)');
      const insert = connection.prepare('insert into statement_journal_probe (v) values (?)');
      connection.transaction(() => {
        for (let i = 0; i < 5000; i++) insert.run(`value-${i}-${'x'.repeat(100)}`);
      })();
      const tempFiles = () =>
        readdirSync('/proc/self/fd')
          .map((fd) => {
            try {
              return readlinkSync(`/proc/self/fd/${fd}`);
            } catch {
              return '';
            }
          })
          .filter((target) => target.includes('etilqs_'));
      let during: string[] = [];
      // A unique column can fail halfway through the update, so it keeps a statement journal: about 150 pages.
      connection.transaction(() => {
        connection.prepare(`update statement_journal_probe set v = v || 'y'`).run();
        during = tempFiles();
      })();
      expect(during).toEqual([]);
      expect(connection.prepare('select count(*) as n from statement_journal_probe where v like ?').get('%y')).toEqual({ n: 5000n });
    },
  );
});

describe('a SQLite store beside another process that writes', () => {
  let store: TestStore;
  beforeAll(async () => {
    store = await createTestStore('sqlite');
    await sql`create table writers_probe (id integer primary key, who text not null)`.execute(store.db);
  });
  afterAll(async () => {
    await store.destroy();
  });

  // An `ark-cp` command runs beside the server on the same file. A transaction that read and then wrote used to fail
  // at once with SQLITE_BUSY whenever the other process committed in between (a stale snapshot is not waited for).
  it('commits every transaction that reads and then writes: none fails with SQLITE_BUSY', async () => {
    const other = spawn(
      process.execPath,
      [
        '-e',
        `const Database = require('better-sqlite3');
         const db = new Database(process.argv[1]);
         db.pragma('busy_timeout = 5000');
         const insert = db.prepare("insert into writers_probe (who) values ('other')");
         const pause = new Int32Array(new SharedArrayBuffer(4));
         process.stdout.write('ready\\n');
         for (const end = Date.now() + 3000; Date.now() < end; ) {
           db.exec('begin immediate'); insert.run(); db.exec('commit');
           Atomics.wait(pause, 0, 0, 1);
         }`,
        store.location,
      ],
      { cwd: fileURLToPath(new URL('../..', import.meta.url)), stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const exited = once(other, 'exit');
    await once(other.stdout, 'data');
    const outcomes = await Promise.allSettled(
      Array.from({ length: 200 }, () =>
        store.db.transaction().execute(async (trx) => {
          await sql`select count(*) from writers_probe`.execute(trx);
          await sql`insert into writers_probe (who) values ('store')`.execute(trx);
        }),
      ),
    );
    const [code] = await exited;
    expect(code).toBe(0);
    expect(outcomes.filter((outcome) => outcome.status === 'rejected').map((outcome) => String(outcome.reason))).toEqual([]);
    const rows = await sql<{ who: string; n: bigint }>`select who, count(*) as n from writers_probe group by who order by who`.execute(
      store.db,
    );
    expect(rows.rows.find((row) => row.who === 'store')?.n).toBe(200n);
    expect(rows.rows.find((row) => row.who === 'other')?.n).toBeGreaterThan(0n);
  });
});
