import type { WithdrawalKind, WithdrawalState } from '../../domain/withdrawals/states.js';
import type { JobEarningRow, WithdrawalRow } from '../../store/withdrawals.js';

// The withdrawal services' records: what routes, `ark-cp` and views see of a request, never its row.

/** An account's withdrawal (renter) or payout (host) request. Times are the stored RFC 3339 text. */
export interface WithdrawalRecord {
  id: string;
  accountId: string;
  kind: WithdrawalKind;
  state: WithdrawalState;
  amountMicro: bigint;
  network: string;
  chainId: bigint;
  withdrawalAddressId: string;
  address: string;
  addressVersion: bigint;
  holdReasons: string[];
  reviewReason: string | null;
  txHash: string | null;
  nonce: bigint | null;
  blockNumber: bigint | null;
  failureReason: string | null;
  createdAt: string;
  updatedAt: string;
  confirmedAt: string | null;
}

export function toWithdrawalRecord(row: WithdrawalRow): WithdrawalRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    kind: row.kind,
    state: row.state,
    amountMicro: row.amount_micro,
    network: row.network,
    chainId: row.chain_id,
    withdrawalAddressId: row.withdrawal_address_id,
    address: row.address,
    addressVersion: row.address_version,
    holdReasons: JSON.parse(row.hold_reasons) as string[],
    reviewReason: row.review_reason,
    txHash: row.tx_hash,
    nonce: row.nonce,
    blockNumber: row.block_number,
    failureReason: row.failure_reason,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    confirmedAt: row.confirmed_at,
  };
}

/** A host's metered earnings on one job: the sum of its charges to the host, and when the latest was posted. */
export interface JobEarning {
  jobId: string;
  earnedMicro: bigint;
  lastAt: string;
}

export const toJobEarning = (row: JobEarningRow): JobEarning => ({ jobId: row.job_id, earnedMicro: row.earned_micro, lastAt: row.last_at });
