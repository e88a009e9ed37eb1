import {
  ed25519PrivateKeyFromSeed,
  ed25519PublicKeyFromBase64,
  type FrameSigner,
  type FrameVerifier,
  nodeEd25519Signer,
  nodeEd25519Verifier,
} from '@ark/shared';

/** tweetnacl's secret key: the 32-byte seed, then the 32-byte public key. */
const SECRET_KEY_BYTES = 64;

/**
 * Signs the agent's frames with its secret key (the tweetnacl key `pair` generated) through node:crypto: ed25519 is
 * deterministic, so the signatures are tweetnacl's own (signer.test.ts compares them with tweetnacl-signer.ts), and
 * the daemon does not load tweetnacl, which node:crypto, already loaded for the control plane's key, makes redundant.
 */
export function nodeSigner(secretKey: Uint8Array): FrameSigner {
  if (secretKey.length !== SECRET_KEY_BYTES) throw new Error('a tweetnacl secret key is 64 bytes');
  return nodeEd25519Signer(ed25519PrivateKeyFromSeed(secretKey.subarray(0, 32)));
}

/** Verifies control-plane frames under the key pinned at enrollment. */
export function pinnedVerifier(controlPlanePublicKeyBase64: string): FrameVerifier {
  return nodeEd25519Verifier(ed25519PublicKeyFromBase64(controlPlanePublicKeyBase64));
}
