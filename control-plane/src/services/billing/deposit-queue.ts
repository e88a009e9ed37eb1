import { MAX_TRANSFER_MICRO } from '../../domain/ledger/postings.js';
import { type DepositState, exceedsBalanceCap, refundRefusal } from '../../domain/payments/deposits.js';
import type { KeysetPosition } from '../../store/keyset.js';
import { depositsInStates } from '../../store/deposits.js';
import { payoutRail } from '../withdrawals/deps.js';
import type { DepositDeps } from './deposit-deps.js';
import { type OperatorDeposit, refundOf, toDepositRecord } from './records.js';

export type { OperatorDeposit };

/** Deposits in one state over every account, oldest final first: the operators' queue of held and refundable money. */
export async function depositsForOperators(
  deps: DepositDeps,
  state: DepositState,
  after: KeysetPosition | null,
  fetch: number,
): Promise<OperatorDeposit[]> {
  const rail = payoutRail(deps);
  const rows = await depositsInStates(deps.store.db, [state], after, Math.max(1, Math.min(fetch, 101)));
  return rows.map((row) => ({
    deposit: toDepositRecord(row),
    refund: refundOf(row),
    needsOperator: row.state === 'HELD' && exceedsBalanceCap(row.amount_micro ?? 0n, deps.payments.balanceCapMicro, MAX_TRANSFER_MICRO),
    refundRefusal: refundRefusal(
      {
        state: row.state,
        fromAddress: row.from_address,
        chainId: Number(row.chain_id),
        tokenAddress: row.token_address,
        amountMicro: row.amount_micro,
      },
      rail && { chainId: rail.network.chainId, usdcAddress: rail.usdc.address },
    ),
  }));
}
