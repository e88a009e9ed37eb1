import { createPublicKey, verify as cryptoVerify } from 'node:crypto';
import { type Static, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { canonicalJson } from '../canonical-json.js';
import { ImageDigest, Rfc3339Utc, Uuid } from '../formats.js';

/**
 * Hardware receipts: what a machine's self-test measured, signed by the machine's own ed25519 key (the key it
 * enrolled with), so anyone holding that public key can check a receipt without trusting the control plane that
 * serves it.
 *
 * The signed text is the canonical JSON (canonical-json.ts) of a HardwareReceiptBody; the signature is ed25519 over
 * its UTF-8 bytes, base64. A receipt travels as `{receipt, signature}`: the text exactly as signed, never re-encoded.
 * Check one with `verifyHardwareReceipt` (used by the control plane on receipt and by `ark machines verify`).
 *
 * The score is worked out from the figures by `hardwareReceiptScore`, never taken from the agent: a verifier
 * recomputes it from the signed figures.
 */

export const HARDWARE_RECEIPT_VERSION = 1;
/** Largest receipt text accepted (bytes); a receipt of 64 GPUs stays far below it. */
export const HARDWARE_RECEIPT_MAX_BYTES = 48 * 1024;

/** Why the self-test ran. `job_start` runs identity only (no benchmark), before the job's readiness. */
export const SELFTEST_TRIGGERS = ['enrollment', 'daily', 'job_start', 'manual', 'command'] as const;
export type SelftestTrigger = (typeof SELFTEST_TRIGGERS)[number];

/** One GPU as `nvidia-smi -q -x` names it. */
export const ReceiptGpu = Type.Object(
  {
    /** Minor number order, as nvidia-smi lists them. */
    index: Type.Integer({ minimum: 0, maximum: 63 }),
    uuid: Type.String({ maxLength: 100 }),
    name: Type.String({ maxLength: 200 }),
    /** e.g. `00000000:01:00.0` */
    pci_address: Type.String({ maxLength: 32 }),
    /** `pci_device_id`, e.g. `0x233010DE`. */
    pci_device_id: Type.String({ maxLength: 32 }),
    /** `pci_sub_system_id`, e.g. `0x16C110DE`. */
    pci_subsystem_id: Type.String({ maxLength: 32 }),
    vbios_version: Type.String({ maxLength: 64 }),
    vram_bytes: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
);
export type ReceiptGpu = Static<typeof ReceiptGpu>;

const Rate = Type.Number({ minimum: 0, maximum: 1e15 });

/** What the benchmark container measured. Rates are per second; absent where the backend cannot measure it. */
export const ReceiptBenchmark = Type.Object(
  {
    /** The image, pulled and run by digest through the job runtime. */
    image: ImageDigest,
    /** `cuda` on an NVIDIA host, `cpu` where there is no GPU. */
    backend: Type.Union([Type.Literal('cpu'), Type.Literal('cuda')]),
    /** Dense matrix-multiply rate, GFLOP/s (llama.cpp prompt processing on the fixed model: 2 x params FLOP per token). */
    matmul_gflops: Rate,
    /** Memory-bandwidth rate, GB/s (llama.cpp generation on the fixed model: the weights' bytes read per token). */
    memory_bandwidth_gbps: Rate,
    /** Host-to-device copy rate, GB/s (GPU only). */
    host_to_device_gbps: Type.Optional(Rate),
    prompt_tokens_per_s: Rate,
    generation_tokens_per_s: Rate,
    /** Bytes of the fixed model's weights and its parameter count, so a verifier can redo the arithmetic. */
    model_bytes: Type.Integer({ minimum: 1 }),
    model_params: Type.Integer({ minimum: 1 }),
    disk_write_mbps: Rate,
    disk_read_mbps: Rate,
  },
  { additionalProperties: false },
);
export type ReceiptBenchmark = Static<typeof ReceiptBenchmark>;

export const ReceiptNetwork = Type.Object(
  { download_mbps: Type.Optional(Rate), upload_mbps: Type.Optional(Rate), latency_ms: Type.Optional(Rate) },
  { additionalProperties: false },
);
export type ReceiptNetwork = Static<typeof ReceiptNetwork>;

export const HardwareReceiptBody = Type.Object(
  {
    version: Type.Literal(HARDWARE_RECEIPT_VERSION),
    machine_id: Uuid,
    /**
     * Per machine, from 1, each receipt the next, persisted by the agent: the control plane refuses one at or below
     * the highest it stored (a replay).
     */
    receipt_seq: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
    trigger: Type.Union(SELFTEST_TRIGGERS.map((trigger) => Type.Literal(trigger))),
    /** The run_selftest command this answers, or the job whose start it checked. */
    command_id: Type.Optional(Uuid),
    job_id: Type.Optional(Uuid),
    started_at: Rfc3339Utc,
    measured_at: Rfc3339Utc,
    duration_ms: Type.Integer({ minimum: 0 }),
    /** False when any part failed or ran past its bound; `error` says which. A failed receipt is still signed and stored. */
    ok: Type.Boolean(),
    error: Type.Optional(Type.String({ maxLength: 500 })),
    driver_version: Type.Optional(Type.String({ maxLength: 64 })),
    cuda_version: Type.Optional(Type.String({ maxLength: 64 })),
    gpus: Type.Array(ReceiptGpu, { maxItems: 64 }),
    cpu: Type.Object(
      { model: Type.String({ maxLength: 200 }), cores: Type.Integer({ minimum: 1, maximum: 4096 }) },
      { additionalProperties: false },
    ),
    ram_bytes: Type.Integer({ minimum: 0 }),
    benchmark: Type.Optional(ReceiptBenchmark),
    network: Type.Optional(ReceiptNetwork),
  },
  { additionalProperties: false },
);
export type HardwareReceiptBody = Static<typeof HardwareReceiptBody>;

/** A receipt as it travels and is stored: the signed text and its signature. */
export const SignedHardwareReceipt = Type.Object(
  {
    receipt: Type.String({ minLength: 2, maxLength: HARDWARE_RECEIPT_MAX_BYTES }),
    /** base64 ed25519 signature (64 bytes) of the UTF-8 bytes of `receipt`. */
    signature: Type.String({ minLength: 88, maxLength: 88, pattern: '^[A-Za-z0-9+/]{86}==$' }),
  },
  { additionalProperties: false },
);
export type SignedHardwareReceipt = Static<typeof SignedHardwareReceipt>;

/** Signs a body with the machine's key (`sign` as the agent's channel signer). */
export function signHardwareReceipt(body: HardwareReceiptBody, sign: (bytes: Uint8Array) => Uint8Array): SignedHardwareReceipt {
  const receipt = canonicalJson(body);
  return { receipt, signature: Buffer.from(sign(Buffer.from(receipt, 'utf8'))).toString('base64') };
}

export type ReceiptCheck =
  | { ok: true; body: HardwareReceiptBody; score: number | null }
  | { ok: false; reason: 'malformed' | 'bad_signature' | 'not_canonical' | 'wrong_machine'; detail?: string };

/**
 * Checks a signed receipt against a machine's public key (base64 of the 32 raw ed25519 bytes, as enrolled) and,
 * when given, the machine it must name. Pure: no clock and no store (replays are the holder's to refuse by
 * `receipt_seq`).
 */
export function verifyHardwareReceipt(signed: unknown, publicKeyBase64: string, machineId?: string): ReceiptCheck {
  if (!Value.Check(SignedHardwareReceipt, signed)) return { ok: false, reason: 'malformed', detail: 'not a {receipt, signature} pair' };
  const raw = Buffer.from(publicKeyBase64, 'base64');
  if (raw.length !== 32) return { ok: false, reason: 'malformed', detail: 'the public key is not 32 bytes' };
  const key = createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, raw]), format: 'der', type: 'spki' });
  const signature = Buffer.from(signed.signature, 'base64');
  if (signature.length !== 64 || !cryptoVerify(null, Buffer.from(signed.receipt, 'utf8'), key, signature)) {
    return { ok: false, reason: 'bad_signature' };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(signed.receipt);
  } catch {
    return { ok: false, reason: 'malformed', detail: 'the receipt is not JSON' };
  }
  if (!Value.Check(HardwareReceiptBody, parsed)) {
    const first = [...Value.Errors(HardwareReceiptBody, parsed)][0];
    return { ok: false, reason: 'malformed', detail: first ? `${first.path || '/'}: ${first.message}` : 'not a receipt' };
  }
  // One text per body: a signed non-canonical variant of a body is refused, so stored receipts compare by text.
  if (canonicalJson(parsed) !== signed.receipt) return { ok: false, reason: 'not_canonical' };
  if (machineId !== undefined && parsed.machine_id !== machineId) return { ok: false, reason: 'wrong_machine' };
  return { ok: true, body: parsed, score: hardwareReceiptScore(parsed) };
}

/** DER prefix of an ed25519 SubjectPublicKeyInfo; the 32 raw key bytes follow. */
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

/**
 * The machine's score, DLPerf-like: the geometric mean of its dense-math rate (GFLOP/s) and its memory-bandwidth
 * rate (GB/s) on the fixed model, rounded to one decimal. Null without a benchmark or for a failed receipt. Anyone
 * recomputes it from the signed figures; the control plane stores this, never a figure the agent claims.
 */
export function hardwareReceiptScore(body: HardwareReceiptBody): number | null {
  if (!body.ok || body.benchmark === undefined) return null;
  const { matmul_gflops, memory_bandwidth_gbps } = body.benchmark;
  return Math.round(Math.sqrt(matmul_gflops * memory_bandwidth_gbps) * 10) / 10;
}
