// The renter's public keys for one job, and the publickey check ssh2 leaves to the server.
import { timingSafeEqual } from 'node:crypto';
import type { ParsedKey, PublicKeyAuthContext } from 'ssh2';
import ssh2 from 'ssh2';

// ssh2 is CommonJS: plain Node (the bundled agent) exposes only its default export to ESM.
const { utils } = ssh2;

/** Keys accepted per job; the launch command carries at most 32. */
export const AUTHORIZED_KEYS_MAX = 32;

/** Parses OpenSSH public key lines (`ssh-ed25519 AAAA... comment`); unreadable or private keys are skipped. */
export function parseAuthorizedKeys(lines: readonly string[]): ParsedKey[] {
  const keys: ParsedKey[] = [];
  for (const line of lines.slice(0, AUTHORIZED_KEYS_MAX)) {
    const parsed = utils.parseKey(line.trim());
    const key = Array.isArray(parsed) ? parsed[0] : parsed;
    if (key === undefined || key instanceof Error || key.isPrivateKey()) continue;
    keys.push(key);
  }
  return keys;
}

function sameBytes(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

export type PublicKeyVerdict = 'accept' | 'reject';

/**
 * A publickey attempt is accepted when the offered key is one of the job's keys and, when the client
 * signed (the real attempt, not the "would you accept this key" query), the signature over the
 * session-bound blob verifies with that key.
 */
export function checkPublicKey(
  keys: readonly ParsedKey[],
  context: Pick<PublicKeyAuthContext, 'key' | 'signature' | 'blob' | 'hashAlgo'>,
): PublicKeyVerdict {
  const match = keys.find((key) => key.type === context.key.algo && sameBytes(key.getPublicSSH(), context.key.data));
  if (match === undefined) return 'reject';
  if (context.signature === undefined) return 'accept';
  if (context.blob === undefined) return 'reject';
  return match.verify(context.blob, context.signature, context.hashAlgo) === true ? 'accept' : 'reject';
}
