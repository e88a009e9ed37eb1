import {
  createCipheriv,
  createDecipheriv,
  createPrivateKey,
  generateKeyPairSync,
  hkdfSync,
  type KeyObject,
  randomBytes,
  sign,
} from 'node:crypto';
import { ed25519PublicKeyToBase64 } from '@ark/shared';
import type { Store } from '../store/db.js';

/** The control plane's channel key: every replica signs agent frames with the same pair, which agents pin. */
export interface ControlPlaneIdentity {
  publicKeyBase64: string;
  sign(bytes: Uint8Array): Uint8Array;
}

export const IDENTITY_SETTING_KEY = 'channel.identity.v1';

interface StoredIdentity {
  public_key: string;
  /** PKCS#8 DER of the private key, sealed with AES-256-GCM under a key derived from config.secretKey. */
  private_key_sealed: string;
}

/**
 * The identity loaded once, for the composition root to hand to everything that signs or announces it (the gateway,
 * enrollment): every call answers the same pair, since the key never changes under a running process. A failed load
 * (store down at boot) is retried by the next call instead of being kept.
 */
export function identityLoader(store: Store, secretKey: Buffer): () => Promise<ControlPlaneIdentity> {
  let pending: Promise<ControlPlaneIdentity> | null = null;
  return () => {
    if (!pending) {
      const loading = loadControlPlaneIdentity(store, secretKey);
      pending = loading;
      loading.catch(() => {
        if (pending === loading) pending = null;
      });
    }
    return pending;
  };
}

/**
 * Loads the control plane's ed25519 key pair from the settings table, creating it on first use. Replicas starting
 * together race on the insert; the loser reads the winner's key, so all replicas sign with one key. Each call reads
 * the store: hold on to the result, or use identityLoader.
 */
export async function loadControlPlaneIdentity(store: Store, secretKey: Buffer): Promise<ControlPlaneIdentity> {
  const existing = await readStored(store);
  if (existing) return open(existing, secretKey);
  const { privateKey } = generateKeyPairSync('ed25519');
  const der = privateKey.export({ format: 'der', type: 'pkcs8' });
  const fresh: StoredIdentity = { public_key: ed25519PublicKeyToBase64(privateKey), private_key_sealed: seal(der, secretKey) };
  await store.db
    .insertInto('settings')
    .values({ key: IDENTITY_SETTING_KEY, value: JSON.stringify(fresh), updated_at: new Date().toISOString() })
    .onConflict((oc) => oc.column('key').doNothing())
    .execute();
  const winner = await readStored(store);
  if (!winner) throw new Error('the control-plane identity could not be stored');
  return open(winner, secretKey);
}

async function readStored(store: Store): Promise<StoredIdentity | null> {
  const row = await store.db.selectFrom('settings').select('value').where('key', '=', IDENTITY_SETTING_KEY).executeTakeFirst();
  return row ? (JSON.parse(row.value) as StoredIdentity) : null;
}

function open(stored: StoredIdentity, secretKey: Buffer): ControlPlaneIdentity {
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey({ key: unseal(stored.private_key_sealed, secretKey), format: 'der', type: 'pkcs8' });
  } catch {
    throw new Error('the control-plane channel key does not open under this ARK_SECRET_KEY: every replica must share the same secret key');
  }
  if (ed25519PublicKeyToBase64(privateKey) !== stored.public_key)
    throw new Error('the stored control-plane channel key pair does not match');
  return { publicKeyBase64: stored.public_key, sign: (bytes) => sign(null, bytes, privateKey) };
}

// Bound to this purpose by HKDF info and the AAD, so no other sealed secret can be swapped in.
const PURPOSE = 'ark-channel-identity-v1';

function sealingKey(secretKey: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', secretKey, Buffer.alloc(0), PURPOSE, 32));
}

function seal(plaintext: Buffer, secretKey: Buffer): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', sealingKey(secretKey), iv);
  cipher.setAAD(Buffer.from(PURPOSE));
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join('.');
}

function unseal(sealed: string, secretKey: Buffer): Buffer {
  const [version, iv, tag, body] = sealed.split('.');
  if (version !== 'v1' || !iv || !tag || body === undefined) throw new Error('unknown sealed key format');
  const decipher = createDecipheriv('aes-256-gcm', sealingKey(secretKey), Buffer.from(iv, 'base64url'));
  decipher.setAAD(Buffer.from(PURPOSE));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]);
}
