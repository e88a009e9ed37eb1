import type { Generated } from 'kysely';
import type { PaidKind, WithdrawalState } from '../../domain/withdrawals/states.js';

/** A withdrawal (renter), payout (host) or deposit refund, from the lock of its amount to CONFIRMED or FAILED. */
export interface WithdrawalsTable {
  id: string;
  account_id: string;
  kind: PaidKind;
  state: WithdrawalState;
  amount_micro: bigint;
  network: string;
  chain_id: bigint;
  token_address: string;
  /** The address-book entry paid; for a `refund`, which has none, the deposit it returns. */
  withdrawal_address_id: string;
  address: string;
  address_version: bigint;
  hold_reasons: string;
  /** 1 once an admin approved it: the holds are skipped, every correctness check still runs. */
  approved: bigint;
  reviewed_by: string | null;
  reviewed_at: string | null;
  review_reason: string | null;
  payer_address: string | null;
  nonce: bigint | null;
  raw_tx: string | null;
  tx_hash: string | null;
  max_fee_per_gas: string | null;
  max_priority_fee_per_gas: string | null;
  signed_at: string | null;
  broadcast_at: string | null;
  block_number: bigint | null;
  fee_wei: string | null;
  confirmed_at: string | null;
  failure_reason: string | null;
  created_at: string;
  updated_at: string;
}

/** Every signed transaction of a request: the first and each replacement at the same nonce. */
export interface WithdrawalTransactionsTable {
  tx_hash: string;
  withdrawal_id: string;
  raw_tx: string;
  max_fee_per_gas: string;
  created_at: string;
}

/** Per network: the payout wallet, its next nonce, and which replica pays (the lease). */
export interface PayoutWalletStateTable {
  chain_id: bigint;
  payer_address: string;
  next_nonce: bigint;
  lease_owner: string | null;
  lease_until: string | null;
  /** Fencing token: one more at every takeover (migration 0028); 0 when the row is made. */
  lease_token: Generated<bigint>;
  updated_at: string;
}

export interface WithdrawalsTables {
  withdrawals: WithdrawalsTable;
  withdrawal_transactions: WithdrawalTransactionsTable;
  payout_wallet_state: PayoutWalletStateTable;
}
