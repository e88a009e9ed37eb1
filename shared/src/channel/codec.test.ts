import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  ed25519PrivateKeyFromSeed,
  ed25519PublicKeyFromBase64,
  ed25519PublicKeyToBase64,
  macFrame,
  nodeEd25519Signer,
  nodeEd25519Verifier,
  openFrame,
  peekPayload,
  sealFrame,
  signFrame,
} from './codec.js';
import { CHANNEL_MAX_FRAME_BYTES } from './messages.js';
import { createKeyExchange, hmacSigner, hmacVerifier } from './session-mac.js';

const agent = generateKeyPairSync('ed25519');
const other = generateKeyPairSync('ed25519');
const signAgent = nodeEd25519Signer(agent.privateKey);
const verifyAgent = nodeEd25519Verifier(agent.publicKey);

const heartbeat = (overrides: Record<string, unknown> = {}) => ({
  v: 1,
  t: 'heartbeat',
  sid: 'sid-1',
  seq: 2,
  at: '2026-01-01T00:00:00.000Z',
  uptime_s: 10,
  healthy: true,
  problems: [],
  running_jobs: [],
  ...overrides,
});

describe('signFrame / openFrame', () => {
  it('round-trips a signed agent payload', () => {
    const raw = signFrame(heartbeat(), signAgent);
    const opened = openFrame(raw, verifyAgent, 'agent');
    expect(opened).toEqual({ ok: true, payload: heartbeat() });
    expect(openFrame(Buffer.from(raw), verifyAgent, 'agent').ok).toBe(true);
  });

  it('signs the exact bytes of p, so any change to p fails the signature', () => {
    const frame = JSON.parse(signFrame(heartbeat(), signAgent)) as { p: string; s: string };
    const tampered = JSON.stringify({ p: frame.p.replace('"uptime_s":10', '"uptime_s":11'), s: frame.s });
    expect(openFrame(tampered, verifyAgent, 'agent')).toMatchObject({ ok: false, reason: 'bad_signature' });
    // Re-serialising p (same meaning, other bytes) also fails: the signature is over bytes, not meaning.
    const reformatted = JSON.stringify({ p: JSON.stringify(JSON.parse(frame.p), null, 1), s: frame.s });
    expect(openFrame(reformatted, verifyAgent, 'agent')).toMatchObject({ ok: false, reason: 'bad_signature' });
  });

  it('refuses a frame signed by another key', () => {
    const raw = signFrame(heartbeat(), nodeEd25519Signer(other.privateKey));
    expect(openFrame(raw, verifyAgent, 'agent')).toMatchObject({ ok: false, reason: 'bad_signature' });
  });

  it('refuses unsigned frames and mangled signatures', () => {
    const p = JSON.stringify(heartbeat());
    expect(openFrame(JSON.stringify({ p }), verifyAgent, 'agent')).toMatchObject({ ok: false, reason: 'unsigned' });
    expect(openFrame(JSON.stringify({ p, s: '' }), verifyAgent, 'agent')).toMatchObject({ ok: false, reason: 'unsigned' });
    expect(openFrame(JSON.stringify({ p, s: 'abc' }), verifyAgent, 'agent')).toMatchObject({ ok: false, reason: 'bad_signature' });
    const { s } = JSON.parse(signFrame(heartbeat(), signAgent)) as { s: string };
    // Whitespace a lenient base64 decoder would skip.
    expect(openFrame(JSON.stringify({ p, s: ` ${s.slice(1)}` }), verifyAgent, 'agent')).toMatchObject({
      ok: false,
      reason: 'bad_signature',
    });
  });

  it('refuses malformed frames', () => {
    expect(openFrame('not json', verifyAgent, 'agent')).toMatchObject({ ok: false, reason: 'malformed_frame' });
    expect(openFrame('[1]', verifyAgent, 'agent')).toMatchObject({ ok: false, reason: 'malformed_frame' });
    expect(openFrame('{"p":1,"s":"x"}', verifyAgent, 'agent')).toMatchObject({ ok: false, reason: 'malformed_frame' });
    const frame = JSON.parse(signFrame(heartbeat(), signAgent)) as Record<string, unknown>;
    expect(openFrame(JSON.stringify({ ...frame, x: 1 }), verifyAgent, 'agent')).toMatchObject({ ok: false, reason: 'malformed_frame' });
  });

  it('refuses a signed payload that is not JSON', () => {
    const p = '{not json';
    const s = Buffer.from(signAgent(Buffer.from(p))).toString('base64');
    expect(openFrame(JSON.stringify({ p, s }), verifyAgent, 'agent')).toMatchObject({ ok: false, reason: 'malformed_payload' });
  });

  it('refuses an unknown protocol version before looking at the schema', () => {
    const raw = signFrame(heartbeat({ v: 2 }), signAgent);
    expect(openFrame(raw, verifyAgent, 'agent')).toMatchObject({ ok: false, reason: 'unknown_version', detail: 'v=2' });
    expect(openFrame(signFrame({ t: 'heartbeat' }, signAgent), verifyAgent, 'agent')).toMatchObject({
      ok: false,
      reason: 'unknown_version',
    });
  });

  it('checks the payload against the schema of its type', () => {
    expect(openFrame(signFrame(heartbeat({ uptime_s: -1 }), signAgent), verifyAgent, 'agent')).toMatchObject({
      ok: false,
      reason: 'invalid_payload',
      detail: 'heartbeat: /uptime_s Expected integer to be greater or equal to 0',
    });
    expect(openFrame(signFrame(heartbeat({ extra: true }), signAgent), verifyAgent, 'agent')).toMatchObject({ reason: 'invalid_payload' });
    const ack = { v: 1, t: 'ack', sid: 's', seq: 3, upto: 4 };
    expect(openFrame(signFrame(ack, signAgent), verifyAgent, 'control-plane')).toEqual({ ok: true, payload: ack });
  });

  it('refuses a type the catalog does not hold, or one the other side sends, before its schema', () => {
    // A heartbeat is an agent message: the agent refuses it from the control plane, and the reverse for an ack.
    expect(openFrame(signFrame(heartbeat(), signAgent), verifyAgent, 'control-plane')).toEqual({
      ok: false,
      reason: 'unknown_type',
      detail: 'heartbeat is sent by the agent',
    });
    const ack = { v: 1, t: 'ack', sid: 's', seq: 3, upto: 4 };
    expect(openFrame(signFrame(ack, signAgent), verifyAgent, 'agent')).toMatchObject({ reason: 'unknown_type' });
    // A newer peer's type, a type that is an Object.prototype key, a missing or non-string type.
    expect(openFrame(signFrame(heartbeat({ t: 'self_test' }), signAgent), verifyAgent, 'agent')).toEqual({
      ok: false,
      reason: 'unknown_type',
      detail: 'self_test',
    });
    for (const t of ['__proto__', 'constructor', 'toString', undefined, 7, { t: 'heartbeat' }]) {
      expect(openFrame(signFrame(heartbeat({ t }), signAgent), verifyAgent, 'agent')).toMatchObject({ ok: false, reason: 'unknown_type' });
    }
  });

  it('checks formats (uuid, date-time) inside payloads', () => {
    const hello = {
      v: 1,
      t: 'hello',
      sid: 's',
      seq: 1,
      machine_id: randomUUID(),
      challenge: 'c'.repeat(43),
      agent_time: '2026-01-01T00:00:00Z',
      agent_version: '1.0.0',
      commands_applied_upto: 0,
    };
    expect(openFrame(signFrame(hello, signAgent), verifyAgent, 'agent').ok).toBe(true);
    expect(openFrame(signFrame({ ...hello, machine_id: 'nope' }, signAgent), verifyAgent, 'agent')).toMatchObject({
      reason: 'invalid_payload',
    });
    expect(openFrame(signFrame({ ...hello, agent_time: '2026-13-45T00:00:00Z' }, signAgent), verifyAgent, 'agent')).toMatchObject({
      reason: 'invalid_payload',
    });
  });

  it('refuses oversized frames before parsing them', () => {
    const big = signFrame(heartbeat({ problems: ['x'.repeat(CHANNEL_MAX_FRAME_BYTES)] }), signAgent);
    expect(openFrame(big, verifyAgent, 'agent')).toMatchObject({ ok: false, reason: 'oversized' });
    expect(openFrame(signFrame(heartbeat(), signAgent), verifyAgent, 'agent', 100)).toMatchObject({ reason: 'oversized' });
  });

  it('round-trips non-ASCII text in payloads', () => {
    const raw = signFrame(heartbeat({ problems: ['disk ä 满 🚀'] }), signAgent);
    expect(openFrame(raw, verifyAgent, 'agent')).toMatchObject({ ok: true, payload: { problems: ['disk ä 满 🚀'] } });
  });
});

describe('peekPayload', () => {
  it('reads claimed fields without verifying', () => {
    expect(peekPayload(signFrame({ t: 'hello', machine_id: 'm' }, signAgent))).toEqual({ t: 'hello', machine_id: 'm' });
    expect(peekPayload('garbage')).toBeNull();
    expect(peekPayload(JSON.stringify({ p: '[1]' }))).toBeNull();
  });
});

describe('ed25519 keys', () => {
  it('converts raw base64 keys to node:crypto keys and back', () => {
    const base64 = ed25519PublicKeyToBase64(agent.publicKey);
    expect(Buffer.from(base64, 'base64')).toHaveLength(32);
    const key = ed25519PublicKeyFromBase64(base64);
    const raw = signFrame(heartbeat(), signAgent);
    expect(openFrame(raw, nodeEd25519Verifier(key), 'agent').ok).toBe(true);
    expect(ed25519PublicKeyToBase64(agent.privateKey)).toBe(base64);
  });

  it('builds a private key from a seed that matches its public key', () => {
    const seed = Buffer.alloc(32, 7);
    const privateKey = ed25519PrivateKeyFromSeed(seed);
    const publicKey = ed25519PublicKeyFromBase64(ed25519PublicKeyToBase64(privateKey));
    expect(openFrame(signFrame(heartbeat(), nodeEd25519Signer(privateKey)), nodeEd25519Verifier(publicKey), 'agent').ok).toBe(true);
  });

  it('refuses keys of the wrong length or non-canonical base64', () => {
    expect(() => ed25519PublicKeyFromBase64(Buffer.alloc(31).toString('base64'))).toThrow();
    expect(() => ed25519PublicKeyFromBase64('not base64!')).toThrow();
    expect(() => ed25519PrivateKeyFromSeed(Buffer.alloc(16))).toThrow();
  });
});

describe('MAC frames (session-mac.ts)', () => {
  const context = { challenge: 'c'.repeat(43), sid: 'sid-1', machineId: randomUUID() };
  function agreed() {
    const cp = createKeyExchange();
    const ag = createKeyExchange();
    return {
      agent: ag.derive(cp.publicKey, { ...context, side: 'agent' }),
      controlPlane: cp.derive(ag.publicKey, { ...context, side: 'control-plane' }),
    };
  }

  it('agrees one key per direction on both sides, and the types the catalog allows travel under it', () => {
    const { agent: a, controlPlane: c } = agreed();
    const raw = sealFrame(heartbeat(), { sign: signAgent, mac: a.seal });
    expect(Object.keys(JSON.parse(raw) as object).sort()).toEqual(['m', 'p']);
    expect(openFrame(raw, { verify: verifyAgent, mac: c.check }, 'agent')).toEqual({ ok: true, payload: heartbeat() });
    // Direction matters: the agent's key does not check the agent's own frames as if the control plane sent them.
    expect(openFrame(raw, { verify: verifyAgent, mac: a.check }, 'agent')).toMatchObject({ ok: false, reason: 'bad_mac' });
    // A type that must stay signed is signed by sealFrame even with a MAC key at hand.
    const receipt = sealFrame({ ...heartbeat(), t: 'meter_receipt' }, { sign: signAgent, mac: a.seal });
    expect(Object.keys(JSON.parse(receipt) as object).sort()).toEqual(['p', 's']);
  });

  it('refuses a tampered payload, a MAC from another agreement, a MAC without a key, and a MAC on a signed-only type', () => {
    const { agent: a, controlPlane: c } = agreed();
    const { agent: stranger } = agreed();
    const frame = JSON.parse(macFrame(heartbeat(), a.seal)) as { p: string; m: string };
    const keys = { verify: verifyAgent, mac: c.check };
    const tampered = JSON.stringify({ p: frame.p.replace('"uptime_s":10', '"uptime_s":11'), m: frame.m });
    expect(openFrame(tampered, keys, 'agent')).toMatchObject({ ok: false, reason: 'bad_mac' });
    expect(openFrame(macFrame(heartbeat(), stranger.seal), keys, 'agent')).toMatchObject({ ok: false, reason: 'bad_mac' });
    expect(openFrame(JSON.stringify(frame), verifyAgent, 'agent')).toMatchObject({ ok: false, reason: 'bad_mac' });
    expect(openFrame(JSON.stringify({ p: frame.p, m: 'x' }), keys, 'agent')).toMatchObject({ ok: false, reason: 'bad_mac' });
    expect(openFrame(JSON.stringify({ ...frame, s: 'x' }), keys, 'agent')).toMatchObject({ ok: false, reason: 'malformed_frame' });
    const receipt = macFrame({ ...heartbeat(), t: 'meter_receipt' }, a.seal);
    expect(openFrame(receipt, keys, 'agent')).toMatchObject({ ok: false, reason: 'signature_required', detail: 'meter_receipt' });
  });

  it('MACs as HMAC-SHA256 does (RFC 4231), and checks a MAC against text', () => {
    // RFC 4231 test cases 1, 2 and 6 (a key longer than the block is hashed first).
    const vectors: Array<[Buffer, Buffer, string]> = [
      [Buffer.alloc(20, 0x0b), Buffer.from('Hi There'), 'b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7'],
      [
        Buffer.from('Jefe'),
        Buffer.from('what do ya want for nothing?'),
        '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
      ],
      [
        Buffer.alloc(131, 0xaa),
        Buffer.from('Test Using Larger Than Block-Size Key - Hash Key First'),
        '60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54',
      ],
    ];
    for (const [key, data, expected] of vectors) expect(Buffer.from(hmacSigner(key)(data)).toString('hex')).toBe(expected);
    const check = hmacVerifier(Buffer.from('Jefe'));
    const mac = Buffer.from(vectors[1]?.[2] as string, 'hex');
    expect(check('what do ya want for nothing?', mac)).toBe(true);
    expect(check('what do ya want for nothing!', mac)).toBe(false);
    expect(check('what do ya want for nothing?', mac.subarray(1))).toBe(false);
  });

  it('binds the keys to the handshake: another challenge, session or machine derives other keys', () => {
    const cp = createKeyExchange();
    const ag = createKeyExchange();
    const sealed = macFrame(heartbeat(), ag.derive(cp.publicKey, { ...context, side: 'agent' }).seal);
    for (const changed of [{ challenge: 'd'.repeat(43) }, { sid: 'sid-2' }, { machineId: randomUUID() }]) {
      const check = cp.derive(ag.publicKey, { ...context, ...changed, side: 'control-plane' }).check;
      expect(openFrame(sealed, { verify: verifyAgent, mac: check }, 'agent')).toMatchObject({ ok: false, reason: 'bad_mac' });
    }
    expect(() => cp.derive(Buffer.alloc(32).toString('base64'), { ...context, side: 'control-plane' })).toThrow();
    expect(() => cp.derive('not a key', { ...context, side: 'control-plane' })).toThrow(/X25519/);
  });
});
