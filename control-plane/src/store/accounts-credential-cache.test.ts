import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestStore, DIALECTS, type TestStore } from '../testing/stores.js';
import { insertAccount, markEmailVerified } from './accounts.js';
import { accountOfPrincipal, createAccountAuthenticator } from './accounts-authenticator.js';
import { issueApiKey, issueSession, recordStepUp, revokeApiKey } from './accounts-credentials.js';
import { openStore, type Store } from './db.js';

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

  const freshKey = async (label: string) =>
    issueApiKey(store.db, { accountId, label, scopes: ['renter'], expiresAt: later(3_600_000).toISOString(), now: T0 });

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
    const { token, row } = await issueSession(store.db, accountId, T0, 3_600_000);
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
    await recordStepUp(store.db, { kind: 'api-key', id: row.id }, 'totp', later(5_000));
    expect((await auth.authenticate(secret, later(4_999)))?.stepUp).toEqual({ method: 'totp', until: later(5_000) });
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
});
