import type { X402IntentState } from '../../domain/payments/x402.js';

/** One x402 top-up: an EIP-3009 authorization, its settlement transaction, and its credit. */
export interface X402IntentsTable {
  id: string;
  account_id: string;
  chain_id: bigint;
  network: string;
  token: string;
  payer: string;
  nonce: string;
  pay_to: string;
  amount_micro: bigint;
  valid_after: string;
  valid_before: string;
  signature: string;
  state: X402IntentState;
  reason: string | null;
  gas_wallet: string | null;
  gas_nonce: bigint | null;
  raw_tx: string | null;
  tx_hash: string | null;
  block_number: bigint | null;
  block_hash: string | null;
  log_index: bigint | null;
  credited_micro: bigint | null;
  posting_id: string | null;
  created_at: string;
  updated_at: string;
  credited_at: string | null;
}

export interface X402Tables {
  x402_intents: X402IntentsTable;
}
