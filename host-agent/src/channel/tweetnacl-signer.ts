import type { FrameSigner } from '@ark/shared';
import nacl from 'tweetnacl';

/**
 * Signs frames with a tweetnacl secret key (64 bytes: seed then public key). The channel client signs with
 * node:crypto (signer.ts: the same deterministic ed25519 signatures, and no tweetnacl in the daemon's memory);
 * this one stays as the reference the tests compare it with.
 */
export function tweetnaclSigner(secretKey: Uint8Array): FrameSigner {
  if (secretKey.length !== nacl.sign.secretKeyLength) throw new Error('a tweetnacl secret key is 64 bytes');
  return (bytes) => nacl.sign.detached(bytes, secretKey);
}
