import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from './db.js';
import { migrateToLatest } from './migrate.js';
import { createTestStore, DIALECTS, type TestStore } from '../testing/stores.js';
import { insertAccount } from './accounts.js';
import { createAccountAuthenticator } from './accounts-authenticator.js';
import { storeApiKey, storeSession } from '../testing/credentials.js';
import { recordStepUp, revokeApiKey, revokeSession } from './accounts-credentials.js';
import { turnHostingOn } from './hosts.js';

const T0 = new Date('2026-02-01T00:00:00.000Z');
const later = (ms: number) => new Date(T0.getTime() + ms);

describe.each(DIALECTS)('account authenticator on %s', (dialect) => {
  let store: TestStore;
  let accountId: string;
  beforeAll(async () => {
    store = await createTestStore(dialect);
    accountId = (
      await insertAccount(store.db, {
        email: 'auth@example.test',
        passwordHash: null,
        name: null,
        role: 'host',
        emailVerified: false,
        now: T0,
      })
    ).id;
  });
  afterAll(async () => {
    await store.destroy();
  });

  it('resolves a host’s session with both scopes until it expires or is revoked', async () => {
    const auth = createAccountAuthenticator(store);
    const { token, row } = await storeSession(store.db, accountId, T0, 60_000);
    const principal = await auth.authenticate(token, later(1));
    expect(principal).toMatchObject({
      accountId,
      role: 'host',
      authMethod: 'session',
      credentialId: row.id,
      emailVerified: false,
      accountKind: 'human',
      stepUp: null,
    });
    expect([...principal!.scopes].sort()).toEqual(['host', 'renter']);
    expect(await auth.authenticate(token, later(60_000))).toBeNull();
    await revokeSession(store.db, row.id, later(2));
    expect(await auth.authenticate(token, later(3))).toBeNull();
    expect(await auth.authenticate(`${token}x`, later(1))).toBeNull();
    expect(await auth.authenticate('bogus', later(1))).toBeNull();
    auth.close();
  });

  it('resolves an API key with its scopes, refreshing last_used_at at most once a minute', async () => {
    const auth = createAccountAuthenticator(store);
    const { secret, row } = await storeApiKey(store.db, {
      accountId,
      label: 'k',
      scopes: ['host'],
      expiresAt: later(3_600_000).toISOString(),
      now: T0,
    });
    const principal = await auth.authenticate(secret, later(1_000));
    expect(principal).toMatchObject({ authMethod: 'api-key', credentialId: row.id });
    expect([...principal!.scopes]).toEqual(['host']);
    const lastUsed = async () =>
      (await store.db.selectFrom('api_keys').select('last_used_at').where('id', '=', row.id).executeTakeFirstOrThrow()).last_used_at;
    expect(await lastUsed()).toBe(later(1_000).toISOString());
    await auth.authenticate(secret, later(30_000));
    expect(await lastUsed()).toBe(later(1_000).toISOString());
    await auth.authenticate(secret, later(61_000));
    expect(await lastUsed()).toBe(later(61_000).toISOString());
    expect(await auth.authenticate(secret, later(3_600_000))).toBeNull();
    auth.close();
  });

  it('gives a renter’s session the host scope only once its hosting is on (issue 22)', async () => {
    const auth = createAccountAuthenticator(store);
    const renter = await insertAccount(store.db, {
      email: 'renter-auth@example.test',
      passwordHash: null,
      name: null,
      role: 'renter',
      emailVerified: true,
      now: T0,
    });
    const { token } = await storeSession(store.db, renter.id, T0, 60_000);
    expect([...(await auth.authenticate(token, later(1)))!.scopes]).toEqual(['renter']);
    await turnHostingOn(store.db, renter.id, later(2));
    expect([...(await auth.authenticate(token, later(3)))!.scopes].sort()).toEqual(['host', 'renter']);
    auth.close();
  });

  it('reports a step-up only while it is fresh, and sees revocation at once', async () => {
    const auth = createAccountAuthenticator(store);
    const session = await storeSession(store.db, accountId, T0, 3_600_000);
    await recordStepUp(store.db, { kind: 'session', id: session.row.id }, 'totp', later(10_000));
    expect((await auth.authenticate(session.token, later(9_999)))?.stepUp).toEqual({ method: 'totp', until: later(10_000) });
    expect((await auth.authenticate(session.token, later(10_000)))?.stepUp).toBeNull();
    // A key's step-up counts only when a sign-in wallet signed it: a password or TOTP one is a person's, for sessions.
    const { secret, row } = await storeApiKey(store.db, { accountId, label: 'k2', scopes: ['renter', 'host'], expiresAt: null, now: T0 });
    await recordStepUp(store.db, { kind: 'api-key', id: row.id }, 'totp', later(10_000));
    expect((await auth.authenticate(secret, later(5_000)))?.stepUp).toBeNull();
    await recordStepUp(store.db, { kind: 'api-key', id: row.id }, 'wallet', later(10_000));
    expect((await auth.authenticate(secret, later(9_999)))?.stepUp).toEqual({ method: 'wallet', until: later(10_000) });
    expect((await auth.authenticate(secret, later(10_000)))?.stepUp).toBeNull();
    expect(await revokeApiKey(store.db, accountId, row.id, later(1))).toBe(true);
    expect(await auth.authenticate(secret, later(2))).toBeNull();
    auth.close();
    // A closed authenticator answers nobody.
    const { secret: fresh } = await storeApiKey(store.db, { accountId, label: 'k3', scopes: ['renter'], expiresAt: null, now: T0 });
    expect(await auth.authenticate(fresh, later(1))).toBeNull();
  });
});

describe('account authenticator on an in-memory SQLite store', () => {
  it('falls back to the shared connection when there is no file to open', async () => {
    const store = openStore({ databaseUrl: null, sqlitePath: ':memory:' });
    await migrateToLatest(store);
    const accountId = (
      await insertAccount(store.db, {
        email: 'mem@example.test',
        passwordHash: null,
        name: null,
        role: 'renter',
        emailVerified: true,
        now: T0,
      })
    ).id;
    const { token } = await storeSession(store.db, accountId, T0, 60_000);
    const auth = createAccountAuthenticator(store);
    expect((await auth.authenticate(token, later(1)))?.accountId).toBe(accountId);
    auth.close();
    await store.close();
  });
});
