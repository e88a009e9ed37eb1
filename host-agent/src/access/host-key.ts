// Each job's SSH listener has its own ed25519 host key, kept in the agent's state directory so the
// fingerprint the renter was shown still holds after an agent restart.
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { ed25519PrivateKeyFromSeed, ed25519PublicKeyToBase64 } from '@ark/shared';
import ssh2 from 'ssh2';

// ssh2 is CommonJS: plain Node (the bundled agent) exposes only its default export to ESM.
const { utils } = ssh2;

export type HostKey = {
  /** OpenSSH private key text, as ssh2's Server takes it. */
  privateKey: string;
  /** `ssh-ed25519 AAAA...`. */
  publicKey: string;
  /** `SHA256:<base64 without padding>`, exactly as `ssh-keygen -lf` and OpenSSH clients print it. */
  fingerprint: string;
};

/** The SHA256 fingerprint of an SSH public key blob (the wire encoding, base64 in authorized_keys). */
export function fingerprintOf(publicKeyBlob: Buffer): string {
  return `SHA256:${createHash('sha256').update(publicKeyBlob).digest('base64').replace(/=+$/, '')}`;
}

export function hostKeyFromPrivate(privateKey: string): HostKey {
  const parsed = utils.parseKey(privateKey);
  if (parsed instanceof Error) throw new Error(`unreadable host key: ${parsed.message}`);
  if (!parsed.isPrivateKey()) throw new Error('host key file holds no private key');
  const blob = parsed.getPublicSSH();
  return { privateKey, publicKey: `${parsed.type} ${blob.toString('base64')}`, fingerprint: fingerprintOf(blob) };
}

function sshString(data: Buffer | string): Buffer {
  const bytes = typeof data === 'string' ? Buffer.from(data) : data;
  const length = Buffer.alloc(4);
  length.writeUInt32BE(bytes.length, 0);
  return Buffer.concat([length, bytes]);
}

/**
 * A new ed25519 key in OpenSSH's private key format. Built here from node:crypto rather than with
 * ssh2's keygen, which drops a leading zero byte of the key (about one key in 300 then fails to parse).
 *
 * From a random seed through DER, never `generateKeyPairSync` with a JWK export: on Node 20 (20.20.2 here) exporting
 * an ed25519 key as JWK holds the key's mutex while it allocates, and a garbage collection in that window runs a
 * finalizer that takes the same mutex, so the process hangs for good (seen in a test run; a loop of the two calls
 * hangs within a thousand keys). An agent doing that while it starts a job's SSH listener would never answer again.
 */
export function generateHostKey(): HostKey {
  const seed = randomBytes(32);
  const publicBytes = Buffer.from(ed25519PublicKeyToBase64(ed25519PrivateKeyFromSeed(seed)), 'base64');
  const publicBlob = Buffer.concat([sshString('ssh-ed25519'), sshString(publicBytes)]);
  const check = randomBytes(4);
  let secret = Buffer.concat([
    check,
    check,
    sshString('ssh-ed25519'),
    sshString(publicBytes),
    sshString(Buffer.concat([seed, publicBytes])),
    sshString('ark-agent job host key'),
  ]);
  // The private section is padded with 1, 2, 3, ... to the cipher block size (8 for "none").
  const padding = (8 - (secret.length % 8)) % 8;
  secret = Buffer.concat([secret, Buffer.from(Array.from({ length: padding }, (_, index) => index + 1))]);
  const body = Buffer.concat([
    Buffer.from('openssh-key-v1\0'),
    sshString('none'),
    sshString('none'),
    sshString(''),
    Buffer.from([0, 0, 0, 1]),
    sshString(publicBlob),
    sshString(secret),
  ]);
  const lines = body.toString('base64').match(/.{1,70}/g) ?? [];
  return hostKeyFromPrivate(`-----BEGIN OPENSSH PRIVATE KEY-----\n${lines.join('\n')}\n-----END OPENSSH PRIVATE KEY-----\n`);
}

/** Reads the host key at `path`, creating it (mode 0600, written atomically) when absent. */
export async function loadOrCreateHostKey(path: string): Promise<HostKey> {
  try {
    return hostKeyFromPrivate(await readFile(path, 'utf8'));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const key = generateHostKey();
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const temporary = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  const handle = await open(temporary, 'wx', 0o600);
  try {
    await handle.writeFile(key.privateKey);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temporary, path);
  return key;
}

export async function removeHostKey(path: string): Promise<void> {
  await rm(path, { force: true });
}
