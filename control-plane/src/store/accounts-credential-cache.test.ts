import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestStore, DIALECTS, type TestStore } from '../testing/stores.js';
import { insertAccount, markEmailVerified } from './accounts.js';
import { accountOfPrincipal, createAccountAuthenticator } from './accounts-authenticator.js';
import { storeApiKey, storeSession } from '../testing/credentials.js';
import { recordStepUp, revokeApiKey } from './accounts-credentials.js';
import { CREDENTIAL_TABLES } from './accounts-credential-cache.js';
import { type Executor, openStore, type Store, sqliteConnectionOf } from './db.js';

// The authenticator keeps verified credentials in memory on SQLite. Whatever it keeps, a request must see every
// committed change to the credential or its account at once: these run a credential that has just been verified
// (so it is cached) through each kind of change, on both dialects.

const T0 = new Date('2026-03-01T00:00:00.000Z');
const later = (ms: number) => new Date(T0.getTime() + ms);

/** Runs SQL on a SQLite file from a separate node process, as the CLI would. */
function inAnotherProcess(file: string, ...statements: Array<[string, ...string[]]>): void {
  const script =
    'const db = new (require(process.argv[1]))(process.argv[2]); for (const [text, ...args] of JSON.parse(process.argv[3])) db.prepare(text).run(...args); db.close();';
  const betterSqlite = createRequire(import.meta.url).resolve('better-sqlite3');
  execFileSync(process.execPath, ['-e', script, betterSqlite, file, JSON.stringify(statements)], { stdio: 'pipe' });
}

describe.each(DIALECTS)('authenticating a credential it has just verified, on %s', (dialect) => {
  let store: TestStore;
  /** A second, independent connection to the same database: another process (the CLI) or another replica. */
  let other: Store;
  let accountId: string;
  beforeAll(async () => {
    store = await createTestStore(dialect);
    other =
      dialect === 'sqlite'
        ? openStore({ databaseUrl: null, sqlitePath: store.location })
        : openStore({ databaseUrl: store.location, sqlitePath: '' });
    accountId = (
      await insertAccount(store.db, {
        email: 'cache@example.test',
        passwordHash: null,
        name: null,
        role: 'renter',
        emailVerified: false,
        now: T0,
      })
    ).id;
  });
  afterAll(async () => {
    await other.close();
    await store.destroy();
  });

  /** A write of this process to a table no credential row is read from (a stored idempotent answer). */
  const writeAnotherTable = (db: Executor, key: string) =>
    db
      .insertInto('idempotency_keys')
      .values({
        principal: accountId,
        route: 'POST /cache-test',
        key,
        request_hash: 'h',
        state: 'done',
        status_code: 200n,
        response_body: 'plain:{}',
        locked_until: T0.toISOString(),
        created_at: T0.toISOString(),
      })
      .execute();

  const freshKey = async (label: string) =>
    storeApiKey(store.db, { accountId, label, scopes: ['renter'], expiresAt: later(3_600_000).toISOString(), now: T0 });

  it('answers the same principal again, and refuses a key revoked here at the next request', async () => {
    const auth = createAccountAuthenticator(store);
    const { secret, row } = await freshKey('here');
    // The first use records last_used_at (a write of its own); the next two are alike.
    await auth.authenticate(secret, later(1));
    const first = await auth.authenticate(secret, later(2));
    const second = await auth.authenticate(secret, later(2));
    expect(second).toEqual(first);
    expect(second).not.toBe(first);
    expect(accountOfPrincipal(second!)?.id).toBe(accountId);
    expect(await revokeApiKey(store.db, accountId, row.id, later(3))).toBe(true);
    expect(await auth.authenticate(secret, later(4))).toBeNull();
    auth.close();
  });

  it('refuses a key revoked through another connection at the next request', async () => {
    const auth = createAccountAuthenticator(store);
    const { secret, row } = await freshKey('elsewhere');
    expect((await auth.authenticate(secret, later(1)))?.credentialId).toBe(row.id);
    expect((await auth.authenticate(secret, later(2)))?.credentialId).toBe(row.id);
    expect(await revokeApiKey(other.db, accountId, row.id, later(3))).toBe(true);
    expect(await auth.authenticate(secret, later(4))).toBeNull();
    auth.close();
  });

  it('sees a step-up and a verified email at the next request', async () => {
    const auth = createAccountAuthenticator(store);
    const { token, row } = await storeSession(store.db, accountId, T0, 3_600_000);
    const before = await auth.authenticate(token, later(1));
    expect(before).toMatchObject({ stepUp: null, emailVerified: false });
    await recordStepUp(store.db, { kind: 'session', id: row.id }, 'password', later(600_000));
    expect((await auth.authenticate(token, later(2)))?.stepUp).toEqual({ method: 'password', until: later(600_000) });
    await markEmailVerified(other.db, accountId, later(3));
    const after = await auth.authenticate(token, later(4));
    expect(after?.emailVerified).toBe(true);
    expect(accountOfPrincipal(after!)?.email_verified_at).toBe(later(3).toISOString());
    auth.close();
  });

  it('still compares expiry and step-up freshness with the time of each request', async () => {
    const auth = createAccountAuthenticator(store);
    const { secret, row } = await freshKey('clock');
    await recordStepUp(store.db, { kind: 'api-key', id: row.id }, 'wallet', later(5_000));
    expect((await auth.authenticate(secret, later(4_999)))?.stepUp).toEqual({ method: 'wallet', until: later(5_000) });
    expect((await auth.authenticate(secret, later(5_000)))?.stepUp).toBeNull();
    expect(await auth.authenticate(secret, later(3_599_999))).not.toBeNull();
    expect(await auth.authenticate(secret, later(3_600_000))).toBeNull();
    auth.close();
  });

  // On SQLite the cache learns of commits from the WAL-index header in the -shm file, which every process's commit
  // rewrites: a revocation by another process (the CLI) is refused at the next request, also after the WAL has been
  // checkpointed and restarted.
  it.runIf(dialect === 'sqlite')('refuses a key revoked by another process at the next request, each time', async () => {
    const auth = createAccountAuthenticator(store);
    for (const checkpoint of [false, true]) {
      const { secret, row } = await freshKey(`process-${checkpoint}`);
      await auth.authenticate(secret, later(1));
      expect((await auth.authenticate(secret, later(2)))?.credentialId).toBe(row.id);
      expect((await auth.authenticate(secret, later(3)))?.credentialId).toBe(row.id);
      // With a checkpoint first, the revocation is written at the start of a restarted WAL.
      inAnotherProcess(store.location, ...(checkpoint ? [['pragma wal_checkpoint(TRUNCATE)'] as [string]] : []), [
        'update api_keys set revoked_at = ? where id = ?',
        later(4).toISOString(),
        row.id,
      ]);
      expect(await auth.authenticate(secret, later(5))).toBeNull();
    }
    auth.close();
  });

  // This process's own writes drop the cache only when they touch a table the credential row is read from. To see
  // that an entry was kept, the key is revoked behind the counters' back (a raw statement on the store's own
  // connection: neither counted nor a foreign commit), which only a fresh read would notice. Other connections'
  // commits are asked for once only here (at the first request), so what is seen comes from the counts alone.
  it.runIf(dialect === 'sqlite')('keeps a verified credential across writes to other tables, not across one to its own', async () => {
    const auth = createAccountAuthenticator(store, { foreignCommitCheckMs: 3_600_000 });
    const { secret, row } = await freshKey('other-tables');
    await auth.authenticate(secret, later(1));
    expect((await auth.authenticate(secret, later(2)))?.credentialId).toBe(row.id);
    const writer = sqliteConnectionOf(store);
    expect(writer).toBeDefined();
    writer?.prepare('update api_keys set revoked_at = ? where id = ?').run(later(3).toISOString(), row.id);
    // A write of this process to another table, in a transaction, as a use case makes it.
    await store.db.transaction().execute((trx) => writeAnotherTable(trx, row.id));
    expect((await auth.authenticate(secret, later(4)))?.credentialId).toBe(row.id);
    // A write to the account (any credential table) drops it: the next request reads the revoked row.
    await markEmailVerified(store.db, accountId, later(5));
    expect(await auth.authenticate(secret, later(6))).toBeNull();
    auth.close();
  });

  // The file is asked at every request here (foreignCommitCheckMs 0): the WAL-index header changes with this process's
  // own commits too, and only the data_version asked after it tells them from another process's. An own commit to
  // another table keeps the entry; another process's commit, to any table, drops it.
  it.runIf(dialect === 'sqlite')('tells its own commits from another process’s when the WAL-index header changes', async () => {
    const auth = createAccountAuthenticator(store, { foreignCommitCheckMs: 0 });
    const { secret, row } = await freshKey('own-or-foreign');
    await auth.authenticate(secret, later(1));
    expect((await auth.authenticate(secret, later(2)))?.credentialId).toBe(row.id);
    // Revoked behind the counters' back (a raw statement on the store's own connection): only a fresh read sees it.
    sqliteConnectionOf(store)?.prepare('update api_keys set revoked_at = ? where id = ?').run(later(3).toISOString(), row.id);
    // Unchanged header (nothing committed since the raw write was looked at) and an own commit to another table.
    expect((await auth.authenticate(secret, later(4)))?.credentialId).toBe(row.id);
    await writeAnotherTable(store.db, row.id);
    expect((await auth.authenticate(secret, later(5)))?.credentialId).toBe(row.id);
    // Another process commits to a table the row is not even read from: the entry is dropped, the revocation seen.
    inAnotherProcess(store.location, [
      'insert into audit_log (id, at, action, detail) values (?, ?, ?, ?)',
      row.id,
      later(6).toISOString(),
      'test',
      '{}',
    ]);
    expect(await auth.authenticate(secret, later(7))).toBeNull();
    auth.close();
  });

  // A revocation inside a transaction: refused from its commit on, not before (the uncommitted row is not visible to
  // the lookup), although the entry was read again while the transaction was open: the commit counts the write again.
  it.runIf(dialect === 'sqlite')('refuses a key revoked in a transaction from the request after its commit', async () => {
    const auth = createAccountAuthenticator(store, { foreignCommitCheckMs: 3_600_000 });
    const { secret, row } = await freshKey('in-transaction');
    await auth.authenticate(secret, later(1));
    await store.db.transaction().execute(async (trx) => {
      expect(await revokeApiKey(trx, accountId, row.id, later(2))).toBe(true);
      expect((await auth.authenticate(secret, later(3)))?.credentialId).toBe(row.id);
      expect((await auth.authenticate(secret, later(3)))?.credentialId).toBe(row.id);
    });
    expect(await auth.authenticate(secret, later(4))).toBeNull();
    auth.close();
  });

  // The count by table holds only if no write to another table reaches the credential tables by itself: no foreign key
  // action from another parent into them, and no trigger that writes them.
  it.runIf(dialect === 'sqlite')('finds no foreign key action or trigger that writes the credential tables', async () => {
    const writer = sqliteConnectionOf(store);
    const credentialTables: readonly string[] = CREDENTIAL_TABLES;
    for (const table of credentialTables) {
      const keys = writer?.prepare(`pragma foreign_key_list(${table})`).all() as Array<{
        table: string;
        on_update: string;
        on_delete: string;
      }>;
      for (const key of keys) {
        if (credentialTables.includes(key.table)) continue;
        expect([key.on_update, key.on_delete].every((action) => action === 'NO ACTION' || action === 'RESTRICT')).toBe(true);
      }
    }
    const triggers = writer?.prepare("select name, sql from sqlite_master where type = 'trigger'").all() as Array<{ sql: string }>;
    for (const trigger of triggers) {
      for (const table of credentialTables) expect(trigger.sql).not.toMatch(new RegExp(`\\b${table}\\b`, 'i'));
    }
  });
});
