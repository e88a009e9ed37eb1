import { HOW_TO_VERIFY_RECEIPTS, type MachineVerificationView, type SelftestQueued } from '@ark/shared';
import type { MachineVerificationRecord, QueuedCommand } from '../services/hosting/index.js';

// Hardware verification: the public view of a machine's signed receipts (routes, console and `ark-cp` share it).

export function machineVerificationView(record: MachineVerificationRecord): MachineVerificationView {
  return {
    machine_id: record.machineId,
    public_key: record.publicKey,
    score: record.score,
    verified_at: record.verifiedAt,
    unlisted: record.unlisted,
    contradictions: record.contradictions.map((c) => ({ code: c.code, message: c.message })),
    receipts: record.receipts.map((r) => ({
      receipt_seq: r.receiptSeq,
      receipt: r.receipt,
      signature: r.signature,
      score: r.score,
      received_at: r.createdAt,
    })),
    how_to_verify: HOW_TO_VERIFY_RECEIPTS,
  };
}

export const selftestQueuedView = (machineId: string, queued: QueuedCommand): SelftestQueued => ({
  machine_id: machineId,
  command_id: queued.commandId,
  state: 'QUEUED' as const,
});
