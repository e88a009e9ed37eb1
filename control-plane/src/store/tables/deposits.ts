import type { Generated } from 'kysely';
import type { DepositState } from '../../domain/payments/deposits.js';

/** One derived deposit address per account (child 0/derivation_index of the configured xpub); never changes. */
export interface DepositAddressesTable {
  account_id: string;
  derivation_index: bigint;
  /** Lower-case 0x address. */
  address: string;
  created_at: string;
}

export interface DepositAddressSequenceTable {
  name: string;
  next_index: bigint;
}

/** A transfer to a deposit address, from SEEN to CREDITED, HELD or BELOW_MINIMUM; a HELD one may be REFUNDING, REFUNDED. */
export interface ChainDepositsTable {
  id: string;
  chain_id: bigint;
  network: string;
  tx_hash: string;
  log_index: bigint;
  account_id: string;
  address: string;
  asset: string;
  token_address: string | null;
  amount_raw: string;
  decimals: bigint;
  amount_micro: bigint | null;
  block_number: bigint;
  block_hash: string;
  state: DepositState;
  reason: string | null;
  price_answer: string | null;
  price_decimals: bigint | null;
  seen_at: string;
  final_at: string | null;
  credited_at: string | null;
  posting_id: string | null;
  /** The transfer's sender (lower-case 0x); null for deposits seen before senders were recorded. */
  from_address: string | null;
  /** The refund (a `withdrawals` row of kind refund) that returns it, or the last one that failed. */
  refund_id: string | null;
  /** The operator (admin account) who credited it by override or refunded it, why, and when. */
  resolved_by: string | null;
  resolution_reason: string | null;
  resolved_at: string | null;
}

/** Per watched network: the scan cursor, the last heads seen, and the lease that lets one replica work it. */
export interface ChainWatchStateTable {
  chain_id: bigint;
  network: string;
  cursor_block: bigint;
  cursor_hash: string;
  head_block: bigint | null;
  finalized_block: bigint | null;
  finalized_advanced_at: string | null;
  lease_owner: string | null;
  lease_until: string | null;
  /** Fencing token: one more at every takeover (migration 0028); 0 when the row is made. */
  lease_token: Generated<bigint>;
  updated_at: string;
}

/** One takeover of a single-holder lease, with the lease it ended (migration 0028). */
export interface LeaseChangesTable {
  id: string;
  lease: string;
  owner: string;
  token: bigint;
  acquired_at: string;
  until: string;
  previous_owner: string | null;
  previous_until: string | null;
}

export interface DepositsTables {
  deposit_addresses: DepositAddressesTable;
  deposit_address_sequence: DepositAddressSequenceTable;
  chain_deposits: ChainDepositsTable;
  chain_watch_state: ChainWatchStateTable;
  lease_changes: LeaseChangesTable;
}
