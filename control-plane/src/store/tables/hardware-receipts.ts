// Hardware receipts (issue 24 item 2). Timestamps are ISO text, booleans 0/1 (bigint), JSON text.

/** One verified receipt, immutable: the text exactly as signed and its signature. */
export interface HardwareReceiptsTable {
  machine_id: string;
  receipt_seq: bigint;
  receipt: string;
  signature: string;
  trigger: string;
  ok: bigint;
  score: number | null;
  measured_at: string;
  created_at: string;
}

/** Per machine: the latest receipt's standing. */
export interface MachineVerificationTable {
  machine_id: string;
  owner_account_id: string;
  last_receipt_seq: bigint;
  score: number | null;
  verified_at: string | null;
  unlisted: bigint;
  /** JSON array of {code, message}. */
  contradictions: string;
  unlisted_since: string | null;
  ticket_id: string | null;
  next_selftest_at: string;
  updated_at: string;
}

export interface HardwareReceiptsTables {
  hardware_receipts: HardwareReceiptsTable;
  machine_verification: MachineVerificationTable;
}
