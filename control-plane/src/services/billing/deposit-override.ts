import { OVERRIDE_REASON } from '../../domain/payments/deposits.js';
import { DomainError } from '../../errors.js';
import { appendAudit } from '../../store/audit.js';
import { findDeposit, finishDeposit, lockDeposit, lockedAvailableMicro } from '../../store/deposits.js';
import { type CommitHook, transact } from '../../store/transaction.js';
import { fundingCredit, postDeposit } from './deposit-credit.js';
import type { DepositDeps } from './deposit-deps.js';
import type { DepositResolutionInput, DepositResolutionResult } from './deposit-resolution.js';

/**
 * An operator credits a HELD deposit although it does not fit under the balance cap: a recorded override. The cap is
 * the only rule it lifts: the posting is the deposit's own exactly-once credit (external -> available, keyed by the
 * deposit), bounded by what one posting may move, and paused admission still refuses it. The state change, the
 * posting, the audit row and the idempotent answer commit together. A deposit already CREDITED answers as it is.
 */
export function creditHeldDeposit(
  deps: DepositDeps,
  input: DepositResolutionInput,
  commit?: CommitHook<DepositResolutionResult>,
): Promise<DepositResolutionResult> {
  const now = deps.clock.now();
  return transact(
    deps.store,
    async (trx) => {
      const found = await findDeposit(trx, input.depositId);
      if (!found) throw new DomainError('NOT_FOUND', 'No such deposit.');
      // Lock order as every credit: the account's available row, then the deposit.
      await lockedAvailableMicro(trx, found.account_id);
      const row = await lockDeposit(trx, found.id);
      if (!row) throw new DomainError('NOT_FOUND', 'No such deposit.');
      const amountMicro = row.amount_micro ?? 0n;
      if (row.state === 'CREDITED')
        return { depositId: row.id, action: 'credit', state: row.state, amountMicro, refund: null, already: true };
      if (row.state !== 'HELD') throw new DomainError('DEPOSIT_NOT_HELD');
      await deps.admissions.admit(trx, fundingCredit(row));
      const postingId = await postDeposit(trx, row, amountMicro, now);
      const moved = await finishDeposit(trx, row.id, 'HELD', 'CREDITED', {
        amountMicro,
        reason: OVERRIDE_REASON,
        price: null,
        postingId,
        at: now,
        resolution: { by: input.adminAccountId, reason: input.reason },
      });
      if (!moved) throw new Error(`held deposit ${row.id} changed state under its lock`);
      await appendAudit(trx, {
        at: now,
        actorAccountId: input.adminAccountId,
        action: 'deposit.credited_by_override',
        subject: row.id,
        detail: {
          reason: input.reason,
          account_id: row.account_id,
          amount_micro: amountMicro.toString(),
          held_reason: row.reason,
          balance_cap_micro: deps.payments.balanceCapMicro?.toString() ?? null,
        },
      });
      return { depositId: row.id, action: 'credit', state: 'CREDITED', amountMicro, refund: null, already: false };
    },
    commit,
  );
}
