import { integrationContext } from '../../domain/accounts/secret-box.js';
import { upsertIntegration } from '../../store/accounts-integrations.js';
import { appendAudit } from '../../store/audit.js';
import { type CommitHook, transact } from '../../store/transaction.js';
import type { AccountDeps } from './deps.js';

/** Stores a third-party token (the model hub's), sealed to its account and provider; it is never shown again. */
export async function storeIntegrationToken(
  deps: AccountDeps,
  input: { accountId: string; provider: string; token: string },
  commit?: CommitHook<void>,
): Promise<void> {
  const { accountId, provider } = input;
  const now = deps.clock.now();
  const sealed = deps.box.seal(input.token, integrationContext(accountId, provider));
  await transact(
    deps.store,
    async (trx) => {
      await upsertIntegration(trx, accountId, provider, sealed, now);
      await appendAudit(trx, { at: now, actorAccountId: accountId, action: 'integration.token_stored', subject: provider });
    },
    commit,
  );
}
