import { randomUUID } from 'node:crypto';
import { iso } from '../../clock.js';
import { ledgerAccounts } from '../../domain/ledger/accounts.js';
import { type RefundRefusal, refundRefusal } from '../../domain/payments/deposits.js';
import { DomainError, stateUnavailable } from '../../errors.js';
import { appendAudit } from '../../store/audit.js';
import { type DepositRow, lockDeposit, markRefunding } from '../../store/deposits.js';
import { transfer } from '../../store/ledger.js';
import { type CommitHook, transact } from '../../store/transaction.js';
import { findPaidRequest, insertWithdrawal, NOT_YET_PAID, type PaidRow } from '../../store/withdrawals.js';
import { payoutRail } from '../withdrawals/deps.js';
import { depositRef } from './deposit-credit.js';
import type { DepositDeps } from './deposit-deps.js';
import type { DepositResolutionInput, DepositResolutionResult } from './deposit-resolution.js';

const REFUSALS: Record<Exclude<RefundRefusal, 'not_held' | 'no_payout_rail'>, string> = {
  asset_not_refundable: 'Only USDC on the primary network goes back through the payout path: credit this deposit instead.',
  sender_unknown: 'The sender of this deposit is not known (seen before senders were recorded, or minted): credit it instead.',
  no_amount: 'The deposit has no value to refund.',
};

/**
 * An operator sends a HELD deposit back to its sender through the payout path: a `refund` request (INTENT, approved:
 * the operator's decision is the review) to the transfer's `from`, whose lock is funded straight from the chain
 * (external -> lock) under the deposit's exactly-once key, so the deposit can never also be credited. The payer then
 * pays it as it pays payouts (checks, nonce, broadcast, finality), and moves the deposit to REFUNDED in the
 * transaction that settles it (or back to HELD if it fails). The request, the posting, the state change, the audit
 * row and the idempotent answer commit together. A deposit already refunding answers its refund.
 */
export function refundHeldDeposit(
  deps: DepositDeps,
  input: DepositResolutionInput,
  commit?: CommitHook<DepositResolutionResult>,
): Promise<DepositResolutionResult> {
  const rail = payoutRail(deps);
  const now = deps.clock.now();
  return transact(
    deps.store,
    async (trx) => {
      const row = await lockDeposit(trx, input.depositId);
      if (!row) throw new DomainError('NOT_FOUND', 'No such deposit.');
      if (row.state === 'REFUNDING' || row.state === 'REFUNDED') return refundingResult(row, await findPaidRequest(trx, row.refund_id));
      const refusal = refundRefusal(
        {
          state: row.state,
          fromAddress: row.from_address,
          chainId: Number(row.chain_id),
          tokenAddress: row.token_address,
          amountMicro: row.amount_micro,
        },
        rail && { chainId: rail.network.chainId, usdcAddress: rail.usdc.address },
      );
      if (refusal === 'not_held') throw new DomainError('DEPOSIT_NOT_HELD');
      if (refusal === 'no_payout_rail' || rail === null)
        throw stateUnavailable('Refunds are paid by the payout wallet: no payout rail is configured.');
      if (refusal !== null) throw new DomainError('DEPOSIT_NOT_REFUNDABLE', REFUSALS[refusal]);
      const amountMicro = row.amount_micro ?? 0n;
      const to = (row.from_address ?? '').toLowerCase();
      const id = randomUUID();
      await insertWithdrawal(trx, {
        id,
        account_id: row.account_id,
        kind: 'refund',
        state: 'INTENT',
        amount_micro: amountMicro,
        network: rail.network.name,
        chain_id: BigInt(rail.network.chainId),
        token_address: rail.usdc.address,
        withdrawal_address_id: row.id,
        address: to,
        address_version: 0n,
        hold_reasons: '[]',
        approved: 1n,
        reviewed_by: input.adminAccountId,
        reviewed_at: iso(now),
        review_reason: input.reason,
        ...NOT_YET_PAID,
        created_at: iso(now),
        updated_at: iso(now),
      });
      const posted = await transfer(trx, {
        from: ledgerAccounts.external(`chain:${row.chain_id}`),
        to: ledgerAccounts.lock(id, row.account_id),
        amountMicro,
        kind: 'refund_lock',
        reference: id,
        externalRef: depositRef(row),
        at: now,
      });
      const moved = await markRefunding(trx, {
        id: row.id,
        refundId: id,
        postingId: posted.postingId,
        by: input.adminAccountId,
        reason: input.reason,
        at: now,
      });
      if (!moved) throw new Error(`held deposit ${row.id} changed state under its lock`);
      await appendAudit(trx, {
        at: now,
        actorAccountId: input.adminAccountId,
        action: 'deposit.refund_requested',
        subject: row.id,
        detail: { reason: input.reason, account_id: row.account_id, amount_micro: amountMicro.toString(), to, refund_id: id },
      });
      return {
        depositId: row.id,
        action: 'refund',
        state: 'REFUNDING',
        amountMicro,
        refund: { id, to, state: 'INTENT' },
        already: false,
      } satisfies DepositResolutionResult;
    },
    commit,
  );
}

function refundingResult(row: DepositRow, refund: PaidRow | undefined): DepositResolutionResult {
  return {
    depositId: row.id,
    action: 'refund',
    state: row.state,
    amountMicro: row.amount_micro ?? 0n,
    refund: refund ? { id: refund.id, to: refund.address, state: refund.state } : null,
    already: true,
  };
}
