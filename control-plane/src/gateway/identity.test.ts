import { randomBytes, verify } from 'node:crypto';
import { ed25519PublicKeyFromBase64 } from '@ark/shared';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../store/db.js';
import { createTestStore, DIALECTS, type TestStore } from '../testing/stores.js';
import { IDENTITY_SETTING_KEY, identityLoader, loadControlPlaneIdentity } from './identity.js';

describe.each(DIALECTS)('control-plane channel identity on %s', (dialect) => {
  let store: TestStore;
  const secretKey = randomBytes(32);
  beforeEach(async () => {
    store = await createTestStore(dialect);
  });
  afterEach(async () => {
    await store.destroy();
  });

  /** Another replica: a second connection pool over the same database. */
  const replica = (): Store =>
    dialect === 'sqlite'
      ? openStore({ databaseUrl: null, sqlitePath: store.location })
      : openStore({ databaseUrl: store.location, sqlitePath: '' });

  it('creates one key pair, stores the private key sealed, and signs with it', async () => {
    const load = identityLoader(store, secretKey);
    const identity = await load();
    expect(Buffer.from(identity.publicKeyBase64, 'base64')).toHaveLength(32);
    const message = Buffer.from('frame bytes');
    expect(verify(null, message, ed25519PublicKeyFromBase64(identity.publicKeyBase64), identity.sign(message))).toBe(true);
    const row = await store.db.selectFrom('settings').select('value').where('key', '=', IDENTITY_SETTING_KEY).executeTakeFirstOrThrow();
    const stored = JSON.parse(row.value) as { public_key: string; private_key_sealed: string };
    expect(stored.public_key).toBe(identity.publicKeyBase64);
    expect(stored.private_key_sealed).toMatch(/^v1\./);
    expect(row.value).not.toContain('PRIVATE');
    // Loaded once: every later call answers the same pair.
    expect(await load()).toBe(identity);
    expect((await loadControlPlaneIdentity(store, secretKey)).publicKeyBase64).toBe(identity.publicKeyBase64);
  });

  it('gives every replica the same key, even when they start together', async () => {
    const others = [replica(), replica()];
    try {
      const identities = await Promise.all([store, ...others].map((s) => loadControlPlaneIdentity(s, secretKey)));
      expect(new Set(identities.map((i) => i.publicKeyBase64)).size).toBe(1);
      const message = Buffer.from('x');
      const key = ed25519PublicKeyFromBase64(identities[0]?.publicKeyBase64 ?? '');
      for (const identity of identities) expect(verify(null, message, key, identity.sign(message))).toBe(true);
    } finally {
      for (const other of others) await other.close();
    }
  });

  it('refuses to start under another secret key', async () => {
    await loadControlPlaneIdentity(store, secretKey);
    const other = replica();
    try {
      await expect(loadControlPlaneIdentity(other, randomBytes(32))).rejects.toThrow(/does not open under this ARK_SECRET_KEY/);
    } finally {
      await other.close();
    }
  });
});
