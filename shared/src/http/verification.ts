import { type Static, Type } from '@sinclair/typebox';
import { Nullable, Rfc3339Utc, Uuid } from '../formats.js';

// The public hardware verification of a machine (issue 24 item 2): what anyone needs to check its signed self-test
// receipts without trusting the control plane that serves them.

/** A stored receipt: the text exactly as the machine signed it and the signature (shared/src/channel/receipts.ts). */
export const VerificationReceipt = Type.Object(
  {
    receipt_seq: Type.Integer({ minimum: 1 }),
    /** Canonical JSON of a HardwareReceiptBody, byte for byte as signed: verify these bytes, do not re-encode them. */
    receipt: Type.String(),
    /** base64 ed25519 signature of the UTF-8 bytes of `receipt`, by the machine's key. */
    signature: Type.String(),
    /** hardwareReceiptScore of its figures (recompute it); null without a benchmark or for a failed run. */
    score: Nullable(Type.Number()),
    received_at: Rfc3339Utc,
  },
  { additionalProperties: false },
);
export type VerificationReceipt = Static<typeof VerificationReceipt>;

export const MachineVerificationView = Type.Object(
  {
    machine_id: Uuid,
    /** base64 of the machine's 32 raw ed25519 public key bytes, exactly as it enrolled (it signs its channel frames too). */
    public_key: Type.String(),
    /** The score of the latest ok receipt with a benchmark, and when that receipt was measured; null before one. */
    score: Nullable(Type.Number()),
    verified_at: Nullable(Rfc3339Utc),
    /** True while the latest receipt contradicts the hardware the machine declared: it is not offered. */
    unlisted: Type.Boolean(),
    /** Why, when unlisted: `{code, message}` per contradiction. */
    contradictions: Type.Array(Type.Object({ code: Type.String(), message: Type.String() }, { additionalProperties: false })),
    /** The latest receipts, newest first (at most 10). */
    receipts: Type.Array(VerificationReceipt),
    /** How to check the receipts yourself. */
    how_to_verify: Type.String(),
  },
  { additionalProperties: false },
);
export type MachineVerificationView = Static<typeof MachineVerificationView>;

/** 202 of POST /api/v1/hosts/machines/{id}/selftest: the run_selftest command queued for the agent. */
export const SelftestQueued = Type.Object(
  { machine_id: Uuid, command_id: Uuid, state: Type.Literal('QUEUED') },
  { additionalProperties: false },
);
export type SelftestQueued = Static<typeof SelftestQueued>;

/** The text every verification view carries (README "Verified hardware" says the same at length). */
export const HOW_TO_VERIFY_RECEIPTS =
  'Each receipt is the canonical JSON of a HardwareReceiptBody, signed by the machine with ed25519. To check one: ' +
  'decode public_key (base64, 32 raw bytes) and signature (base64, 64 bytes); verify the signature over the UTF-8 bytes ' +
  'of `receipt` exactly as served; parse it and check machine_id is this machine; recompute the score as ' +
  'round(sqrt(benchmark.matmul_gflops * benchmark.memory_bandwidth_gbps) * 10) / 10 when ok is true and a benchmark ' +
  'is present (null otherwise). Pin the public key you saw at first (or read it from the host) to catch a swapped key. ' +
  '`ark machines verify <machine_id> [--public-key KEY]` does all of this; the functions are verifyHardwareReceipt and ' +
  'hardwareReceiptScore in @ark/shared (shared/src/channel/receipts.ts).';
