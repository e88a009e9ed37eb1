import { hardwareReceiptScore, type MachineVerificationView, verifyHardwareReceipt } from '@ark/shared';

// `ark machines verify`'s check of one served receipt. Its own module: it loads the contract's schemas, which the
// command imports when it runs, so `ark --help` does not load them.

export interface ReceiptVerdict {
  receipt_seq: number;
  ok: boolean;
  /** What failed (the signature, the machine, the canonical text, the served score), or null. */
  problem: string | null;
  measured_at: string | null;
  score: number | null;
}

/** Checks one served receipt against the key: the signature over the exact text, the machine, and the served score. */
export function checkServedReceipt(
  served: MachineVerificationView['receipts'][number],
  publicKey: string,
  machineId: string,
): ReceiptVerdict {
  const check = verifyHardwareReceipt({ receipt: served.receipt, signature: served.signature }, publicKey, machineId);
  if (!check.ok) {
    const problem = {
      bad_signature: 'the signature does not verify under the public key',
      wrong_machine: 'it names another machine',
      not_canonical: 'its text is not the canonical encoding it was signed as',
      malformed: `malformed${check.detail ? `: ${check.detail}` : ''}`,
    }[check.reason];
    return { receipt_seq: served.receipt_seq, ok: false, problem, measured_at: null, score: null };
  }
  const score = hardwareReceiptScore(check.body);
  if (check.body.receipt_seq !== served.receipt_seq || score !== served.score) {
    return {
      receipt_seq: served.receipt_seq,
      ok: false,
      problem: `served as receipt ${served.receipt_seq} with score ${served.score}, but it says receipt ${check.body.receipt_seq} and scores ${score}`,
      measured_at: check.body.measured_at,
      score,
    };
  }
  return { receipt_seq: served.receipt_seq, ok: true, problem: null, measured_at: check.body.measured_at, score };
}
