import { randomUUID } from 'node:crypto';
import type { Clock } from '../../clock.js';
import { ledgerAccounts } from '../../domain/ledger/accounts.js';
import { appendAudit } from '../../store/audit.js';
import type { Store } from '../../store/db.js';
import { balancesOfOwner, type LedgerVerification, type OwnerBalances, transfer, verifyLedger } from '../../store/ledger.js';
import { transact } from '../../store/transaction.js';

// The account-facing side of the ledger: balances, the operator's credit (standing in for deposits until they
// exist), and the ledger's own check.

/** The store computes these two records (no row behind either); views read them from here. */
export type { LedgerVerification, OwnerBalances };

export interface BillingDeps {
  store: Store;
  clock: Clock;
}

export interface Credited {
  postingId: string;
  availableMicro: bigint;
}

/** An audited adjustment -> available posting, both in one transaction. */
export function creditAccount(
  deps: BillingDeps,
  input: { accountId: string; amountMicro: bigint; reason: string; operator: string },
): Promise<Credited> {
  const { accountId, amountMicro, reason, operator } = input;
  const now = deps.clock.now();
  return transact(deps.store, async (trx) => {
    const posted = await transfer(trx, {
      from: ledgerAccounts.adjustment(),
      to: ledgerAccounts.available(accountId),
      amountMicro,
      kind: 'adjustment',
      reference: `credit:${randomUUID()}`,
      at: now,
    });
    await appendAudit(trx, {
      at: now,
      actorAccountId: null,
      action: 'ledger.credited_by_operator',
      subject: accountId,
      detail: { posting_id: posted.postingId, amount_micro: amountMicro.toString(), reason, operator },
    });
    return { postingId: posted.postingId, availableMicro: posted.toBalanceMicro };
  });
}

/** An account's balances as the ledger holds them: available, held by its jobs, and payable to it as a host. */
export function balancesOf(deps: BillingDeps, accountId: string): Promise<OwnerBalances> {
  return balancesOfOwner(deps.store.db, accountId);
}

/** Every cached balance recomputed from the postings. */
export function verify(deps: BillingDeps): Promise<LedgerVerification> {
  return verifyLedger(deps.store);
}
