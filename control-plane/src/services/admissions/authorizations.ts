import { randomUUID } from 'node:crypto';
import { type AdmissionKind, expiryRefusal } from '../../domain/admissions/admissions.js';
import { iso } from '../../clock.js';
import { DomainError } from '../../errors.js';
import { findAccountById } from '../../store/accounts.js';
import { type AcceptanceAuthorizationRow, insertAcceptanceAuthorization } from '../../store/admissions.js';
import { appendAudit } from '../../store/audit.js';
import { type CommitHook, transact } from '../../store/transaction.js';
import type { AdmissionDeps } from './deps.js';

/**
 * POST /api/v1/admin/acceptance-authorizations: a single-use pass through a paused admission for one account and one
 * kind of operation, until it expires (1 minute .. 7 days). Audited.
 */
export async function issueAcceptanceAuthorization(
  deps: AdmissionDeps,
  input: { adminAccountId: string; accountId: string; kind: AdmissionKind; expiresAt: Date; reason: string },
  commit?: CommitHook<AcceptanceAuthorizationRow>,
): Promise<AcceptanceAuthorizationRow> {
  const now = deps.clock.now();
  const refusal = expiryRefusal(input.expiresAt, now);
  if (refusal) throw new DomainError('VALIDATION_FAILED', `body/expires_at ${refusal}`);
  return transact(
    deps.store,
    async (trx) => {
      if (!(await findAccountById(trx, input.accountId))) throw new DomainError('NOT_FOUND', 'No account has this id.');
      const row: AcceptanceAuthorizationRow = {
        id: randomUUID(),
        account_id: input.accountId,
        kind: input.kind,
        reason: input.reason,
        created_by: input.adminAccountId,
        created_at: iso(now),
        expires_at: iso(input.expiresAt),
        consumed_at: null,
        consumed_reference: null,
      };
      await insertAcceptanceAuthorization(trx, row);
      await appendAudit(trx, {
        at: now,
        actorAccountId: input.adminAccountId,
        action: 'admin.acceptance_authorization.issued',
        subject: row.id,
        detail: { account_id: row.account_id, kind: row.kind, expires_at: row.expires_at, reason: row.reason },
      });
      return row;
    },
    commit,
  );
}
