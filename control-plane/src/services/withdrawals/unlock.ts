import { ledgerAccounts } from '../../domain/ledger/accounts.js';
import type { Tx } from '../../store/db.js';
import { finishRefund } from '../../store/deposits.js';
import { transfer } from '../../store/ledger.js';
import type { PaidRow } from '../../store/withdrawals.js';

/**
 * A failed request's lock goes back where it came from (available for a withdrawal, payable for a payout). A failed
 * refund's lock came from the chain: it goes back out of the ledger, and its deposit is HELD again for an operator.
 */
export async function releaseLock(trx: Tx, row: PaidRow, at: Date): Promise<void> {
  if (row.kind === 'refund') {
    await transfer(trx, {
      from: ledgerAccounts.lock(row.id, row.account_id),
      to: ledgerAccounts.external(`chain:${row.chain_id}`),
      amountMicro: row.amount_micro,
      kind: 'refund_unlock',
      reference: row.id,
      externalRef: `withdrawal-unlock:${row.id}`,
      at,
    });
    await finishRefund(trx, row.id, 'HELD');
    return;
  }
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
export async function settleLock(trx: Tx, row: PaidRow, at: Date): Promise<void> {
  await transfer(trx, {
    from: ledgerAccounts.lock(row.id, row.account_id),
    to: ledgerAccounts.external(`chain:${row.chain_id}`),
    amountMicro: row.amount_micro,
    kind: row.kind,
    reference: row.id,
    externalRef: `withdrawal-paid:${row.id}`,
    at,
  });
  // The refund and its deposit's state move in the same transaction: REFUNDED exactly when it is paid.
  if (row.kind === 'refund') await finishRefund(trx, row.id, 'REFUNDED');
}
