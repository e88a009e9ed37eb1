import { ledgerAccounts } from '../../domain/ledger/accounts.js';
import type { Tx } from '../../store/db.js';
import { transfer } from '../../store/ledger.js';
import type { WithdrawalRow } from '../../store/withdrawals.js';

/** A failed request's lock goes back where it came from (available for a withdrawal, payable for a payout). */
export async function releaseLock(trx: Tx, row: WithdrawalRow, at: Date): Promise<void> {
  await transfer(trx, {
    from: ledgerAccounts.lock(row.id, row.account_id),
    to: row.kind === 'payout' ? ledgerAccounts.payable(row.account_id) : ledgerAccounts.available(row.account_id),
    amountMicro: row.amount_micro,
    kind: row.kind === 'payout' ? 'payout_unlock' : 'withdrawal_unlock',
    reference: row.id,
    externalRef: `withdrawal-unlock:${row.id}`,
    at,
  });
}

/** A paid request's lock leaves for the world, once: the external reference is the request's id. */
export async function settleLock(trx: Tx, row: WithdrawalRow, at: Date): Promise<void> {
  await transfer(trx, {
    from: ledgerAccounts.lock(row.id, row.account_id),
    to: ledgerAccounts.external(`chain:${row.chain_id}`),
    amountMicro: row.amount_micro,
    kind: row.kind,
    reference: row.id,
    externalRef: `withdrawal-paid:${row.id}`,
    at,
  });
}
