import type { AdminDeposit, Deposit, DepositResolution } from '@ark/shared';
import type { DepositRow } from '../../store/deposits.js';
import type { OperatorDeposit } from './deposit-queue.js';
import type { DepositResolutionResult } from './deposit-resolution.js';

/** A stored deposit as the renter sees it. */
export function toDepositView(row: DepositRow): Deposit {
  return {
    deposit_id: row.id,
    state: row.state,
    network: row.network,
    chain_id: Number(row.chain_id),
    asset: row.asset,
    token_address: row.token_address,
    tx_hash: row.tx_hash,
    log_index: Number(row.log_index),
    block_number: row.block_number.toString(),
    amount: row.amount_raw,
    decimals: Number(row.decimals),
    amount_micro: row.amount_micro === null ? null : row.amount_micro.toString(),
    credited_micro: row.state === 'CREDITED' && row.amount_micro !== null ? row.amount_micro.toString() : null,
    reason: row.reason,
    seen_at: row.seen_at,
    credited_at: row.credited_at,
  };
}

/** A deposit as an operator sees it (the admin route, `ark-cp deposits held`, the console). */
export function toAdminDepositView(d: OperatorDeposit): AdminDeposit {
  const { row } = d;
  return {
    ...toDepositView(row),
    account_id: row.account_id,
    from_address: row.from_address,
    needs_operator: d.needsOperator,
    refund_refusal: d.refundRefusal,
    refund:
      row.refund_id === null || row.refund_state === null
        ? null
        : { id: row.refund_id, state: row.refund_state as NonNullable<AdminDeposit['refund']>['state'], tx_hash: row.refund_tx_hash },
    resolved_by: row.resolved_by,
    resolution_reason: row.resolution_reason,
    resolved_at: row.resolved_at,
  };
}

export function toDepositResolutionView(r: DepositResolutionResult): DepositResolution {
  return {
    deposit_id: r.depositId,
    action: r.action,
    state: r.state,
    amount_micro: r.amountMicro.toString(),
    refund_id: r.refund?.id ?? null,
    refund_to: r.refund?.to ?? null,
    already: r.already,
  };
}
