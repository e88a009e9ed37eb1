import { iso } from '../../clock.js';
import { reviewable } from '../../domain/withdrawals/states.js';
import { DomainError } from '../../errors.js';
import { appendAudit } from '../../store/audit.js';
import { type CommitHook, transact } from '../../store/transaction.js';
import { lockWithdrawal, moveWithdrawal } from '../../store/withdrawals.js';
import type { WithdrawalDeps } from './deps.js';
import { emitWithdrawalStateChanged } from './state-events.js';
import { releaseLock } from './unlock.js';

export interface ReviewInput {
  id: string;
  adminAccountId: string;
  decision: 'approve' | 'reject';
  reason: string;
}

export interface ReviewResult {
  id: string;
  kind: 'withdrawal' | 'payout';
  decision: 'approve' | 'reject';
  state: 'INTENT' | 'FAILED';
}

/**
 * An admin's review of a request that is still unsigned (contract part 3): approve gives INTENT (the holds are
 * lifted; the payer re-runs every correctness check), reject gives FAILED and the lock goes back where it came from.
 * Once a nonce is pinned the answer is WITHDRAWAL_NOT_UNSIGNED (409). Audited with the admin and the reason.
 */
export function reviewWithdrawal(deps: WithdrawalDeps, input: ReviewInput, commit?: CommitHook<ReviewResult>): Promise<ReviewResult> {
  const now = deps.clock.now();
  return transact(
    deps.store,
    async (trx) => {
      const row = await lockWithdrawal(trx, input.id);
      if (!row) throw new DomainError('NOT_FOUND', 'No such withdrawal.');
      if (!reviewable(row.state)) throw new DomainError('WITHDRAWAL_NOT_UNSIGNED');
      const reviewed = { reviewed_by: input.adminAccountId, reviewed_at: iso(now), review_reason: input.reason, updated_at: iso(now) };
      const state: ReviewResult['state'] = input.decision === 'approve' ? 'INTENT' : 'FAILED';
      const patch =
        input.decision === 'approve' ? { ...reviewed, approved: 1n, hold_reasons: '[]' } : { ...reviewed, failure_reason: 'rejected' };
      if (!(await moveWithdrawal(trx, row, row.state, state, patch))) throw new DomainError('WITHDRAWAL_NOT_UNSIGNED');
      if (state === 'FAILED') await releaseLock(trx, row, now);
      // Approving a request still INTENT (the payer had not held it yet) moves nothing: nothing to tell.
      if (row.state !== state) await emitWithdrawalStateChanged(trx, row, { from: row.state, to: state, txHash: row.tx_hash }, now);
      await appendAudit(trx, {
        at: now,
        actorAccountId: input.adminAccountId,
        action: `${row.kind}.reviewed`,
        subject: row.id,
        detail: { decision: input.decision, reason: input.reason, from_state: row.state, state },
      });
      return { id: row.id, kind: row.kind, decision: input.decision, state };
    },
    commit,
  );
}
