import type { Deposit } from '@ark/shared';
import type { DepositRow } from '../../store/deposits.js';

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
