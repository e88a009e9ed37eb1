import { openDeletionRequest } from '../../store/accounts-deletion-requests.js';
import { appendAudit } from '../../store/audit.js';
import { type CommitHook, transact } from '../../store/transaction.js';
import type { AccountDeps } from './deps.js';

export interface DeletionRequestRecord {
  id: string;
  requestedAt: string;
}

/** Asks for the account to be deleted: its one open request, opened (and audited) if there is none yet. */
export function requestDeletion(
  deps: AccountDeps,
  accountId: string,
  commit?: CommitHook<DeletionRequestRecord>,
): Promise<DeletionRequestRecord> {
  const now = deps.clock.now();
  return transact(
    deps.store,
    async (trx) => {
      const { row, created } = await openDeletionRequest(trx, accountId, now);
      if (created) await appendAudit(trx, { at: now, actorAccountId: accountId, action: 'account.deletion_requested', subject: row.id });
      return { id: row.id, requestedAt: row.requested_at };
    },
    commit,
  );
}
