import { appendAudit } from '../../store/audit.js';
import { isHostEnabled, setHostingBlocked } from '../../store/hosts.js';
import { transact } from '../../store/transaction.js';
import type { AccountDeps } from './deps.js';

/** The admin block on hosting (no new machines, no offer commits), set or lifted by the operator with a reason; audited. */
export function setHostingBlock(
  deps: AccountDeps,
  input: { accountId: string; blocked: boolean; reason: string },
): Promise<{ hostEnabled: boolean }> {
  const now = deps.clock.now();
  const { accountId, blocked, reason } = input;
  return transact(deps.store, async (trx) => {
    await setHostingBlocked(trx, accountId, blocked, now);
    await appendAudit(trx, {
      at: now,
      actorAccountId: null,
      action: blocked ? 'hosting.blocked_by_operator' : 'hosting.unblocked_by_operator',
      subject: accountId,
      detail: { reason },
    });
    return { hostEnabled: await isHostEnabled(trx, accountId) };
  });
}
