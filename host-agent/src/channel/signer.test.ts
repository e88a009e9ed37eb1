import { ed25519PublicKeyFromBase64, nodeEd25519Verifier, openFrame, signFrame } from '@ark/shared';
import nacl from 'tweetnacl';
import { describe, expect, it } from 'vitest';
import { nodeSigner, pinnedVerifier } from './signer.js';
import { tweetnaclSigner } from './tweetnacl-signer.js';

const payload = { v: 1, t: 'command_ack', sid: 's', seq: 2, upto: 3 };

describe('agent signing', () => {
  const keys = nacl.sign.keyPair();
  const publicKeyBase64 = Buffer.from(keys.publicKey).toString('base64');

  it('signs with tweetnacl what node:crypto verifies on the control plane', () => {
    const raw = signFrame(payload, tweetnaclSigner(keys.secretKey));
    expect(openFrame(raw, nodeEd25519Verifier(ed25519PublicKeyFromBase64(publicKeyBase64)), 'agent')).toEqual({ ok: true, payload });
  });

  it('produces byte-identical signatures with node:crypto from the same secret key', () => {
    expect(signFrame(payload, nodeSigner(keys.secretKey))).toBe(signFrame(payload, tweetnaclSigner(keys.secretKey)));
  });

  it('verifies control-plane frames under the pinned key only', () => {
    const controlPlane = nacl.sign.keyPair();
    const ack = { v: 1, t: 'ack', sid: 's', seq: 2, upto: 1 };
    const raw = signFrame(ack, tweetnaclSigner(controlPlane.secretKey));
    expect(openFrame(raw, pinnedVerifier(Buffer.from(controlPlane.publicKey).toString('base64')), 'control-plane').ok).toBe(true);
    expect(openFrame(raw, pinnedVerifier(publicKeyBase64), 'control-plane')).toMatchObject({ ok: false, reason: 'bad_signature' });
  });

  it('refuses secret keys of the wrong length', () => {
    expect(() => tweetnaclSigner(new Uint8Array(32))).toThrow();
    expect(() => nodeSigner(new Uint8Array(32))).toThrow();
  });
});
