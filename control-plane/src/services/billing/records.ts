import type { DepositState, RefundRefusal } from '../../domain/payments/deposits.js';
import type { X402IntentState } from '../../domain/payments/x402.js';
import type { DepositRow, OperatorDepositRow } from '../../store/deposits.js';
import type { JobCreditRow } from '../../store/job-credits.js';
import type { X402IntentRow } from '../../store/x402.js';

// The billing services' records: what routes, `ark-cp` and views see of money in, never its rows.

/** A deposit seen on chain to an account's deposit address. Times are the stored RFC 3339 text. */
export interface DepositRecord {
  id: string;
  accountId: string;
  state: DepositState;
  network: string;
  chainId: bigint;
  asset: string;
  tokenAddress: string | null;
  txHash: string;
  logIndex: bigint;
  blockNumber: bigint;
  /** The transferred amount in the asset's own units, as text. */
  amountRaw: string;
  decimals: bigint;
  amountMicro: bigint | null;
  reason: string | null;
  /** The transfer's sender (lower-case 0x); null for deposits seen before senders were recorded. */
  fromAddress: string | null;
  seenAt: string;
  finalAt: string | null;
  creditedAt: string | null;
  /** The operator who credited it by override or refunded it, why, and when. */
  resolvedBy: string | null;
  resolutionReason: string | null;
  resolvedAt: string | null;
}

export function toDepositRecord(row: DepositRow): DepositRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    state: row.state,
    network: row.network,
    chainId: row.chain_id,
    asset: row.asset,
    tokenAddress: row.token_address,
    txHash: row.tx_hash,
    logIndex: row.log_index,
    blockNumber: row.block_number,
    amountRaw: row.amount_raw,
    decimals: row.decimals,
    amountMicro: row.amount_micro,
    reason: row.reason,
    fromAddress: row.from_address,
    seenAt: row.seen_at,
    finalAt: row.final_at,
    creditedAt: row.credited_at,
    resolvedBy: row.resolved_by,
    resolutionReason: row.resolution_reason,
    resolvedAt: row.resolved_at,
  };
}

/** A deposit as operators see it: the deposit, its refund's progress on the payout path, and what may be done with it. */
export interface OperatorDeposit {
  deposit: DepositRecord;
  /** The refund that returns it (or the last one that failed), once there is one. */
  refund: { id: string; state: string; txHash: string | null } | null;
  /** Bigger than the cap itself: no room ever appears; only an operator's credit or refund moves it. */
  needsOperator: boolean;
  /** Why it cannot be refunded now; null when it can. */
  refundRefusal: RefundRefusal | null;
}

export const refundOf = (row: OperatorDepositRow): OperatorDeposit['refund'] =>
  row.refund_id === null || row.refund_state === null ? null : { id: row.refund_id, state: row.refund_state, txHash: row.refund_tx_hash };

/** An x402 top-up of an account's balance. */
export interface TopUpRecord {
  id: string;
  accountId: string;
  state: X402IntentState;
  network: string;
  /** The payer's address as stored (lower-case). */
  payer: string;
  amountMicro: bigint;
  creditedMicro: bigint | null;
  reason: string | null;
  txHash: string | null;
  logIndex: bigint | null;
  createdAt: string;
  creditedAt: string | null;
}

export function toTopUpRecord(row: X402IntentRow): TopUpRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    state: row.state,
    network: row.network,
    payer: row.payer,
    amountMicro: row.amount_micro,
    creditedMicro: row.credited_micro,
    reason: row.reason,
    txHash: row.tx_hash,
    logIndex: row.log_index,
    createdAt: row.created_at,
    creditedAt: row.credited_at,
  };
}

/** An automatic credit of a job that failed through its host (issue 24 item 3). */
export interface JobCreditRecord {
  jobId: string;
  reason: string;
  creditMicro: bigint;
  /** Taken from the host's pending and payable earnings; the rest (and the fee) came from the platform. */
  fromHostMicro: bigint;
  healthyAt: string | null;
  createdAt: string;
}

export function toJobCreditRecord(row: JobCreditRow): JobCreditRecord {
  return {
    jobId: row.job_id,
    reason: row.reason,
    creditMicro: BigInt(row.credit_micro),
    fromHostMicro: BigInt(row.from_pending_micro) + BigInt(row.from_payable_micro),
    healthyAt: row.healthy_at,
    createdAt: row.created_at,
  };
}
