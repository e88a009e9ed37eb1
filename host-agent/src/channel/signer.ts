import {
  ed25519PrivateKeyFromSeed,
  ed25519PublicKeyFromBase64,
  type FrameSigner,
  type FrameVerifier,
  nodeEd25519Signer,
  nodeEd25519Verifier,
} from '@ark/shared';
import nacl from 'tweetnacl';

/**
 * Signs the agent's frames with its tweetnacl secret key (64 bytes: seed then public key). An agent sends a
 * heartbeat every 15 s, so tweetnacl's speed is no concern here; the control plane verifies with node:crypto.
 */
export function tweetnaclSigner(secretKey: Uint8Array): FrameSigner {
  if (secretKey.length !== nacl.sign.secretKeyLength) throw new Error('a tweetnacl secret key is 64 bytes');
  return (bytes) => nacl.sign.detached(bytes, secretKey);
}

/** The same signatures from node:crypto (ed25519 is deterministic): for simulating thousands of agents in one process. */
export function nodeSigner(secretKey: Uint8Array): FrameSigner {
  if (secretKey.length !== nacl.sign.secretKeyLength) throw new Error('a tweetnacl secret key is 64 bytes');
  return nodeEd25519Signer(ed25519PrivateKeyFromSeed(secretKey.subarray(0, 32)));
}

/** Verifies control-plane frames under the key pinned at enrollment. */
export function pinnedVerifier(controlPlanePublicKeyBase64: string): FrameVerifier {
  return nodeEd25519Verifier(ed25519PublicKeyFromBase64(controlPlanePublicKeyBase64));
}
