import type { WebhookEventType } from '@ark/shared';
import type { WithdrawalKind, WithdrawalState } from '../../domain/withdrawals/states.js';
import type { Tx } from '../../store/db.js';
import { emitWebhookEvent } from '../../store/webhooks.js';
import type { PaidRow } from '../../store/withdrawals.js';

/** The webhook type each kind of request is told under. */
const EVENT_TYPE: Readonly<Record<WithdrawalKind, WebhookEventType>> = {
  withdrawal: 'withdrawal.state_changed',
  payout: 'payout.state_changed',
};

/**
 * Tells the account that its request moved (`withdrawal.state_changed` or `payout.state_changed`, issue 22), in the
 * transaction that moves it: the event exists exactly when the move commits, and every move is a compare-and-set on
 * the state, so each is told once. `from` is null when the request is made. `txHash` is the transfer signed for it.
 */
export async function emitWithdrawalStateChanged(
  trx: Tx,
  row: Pick<PaidRow, 'id' | 'account_id' | 'kind' | 'amount_micro'>,
  move: { from: WithdrawalState | null; to: WithdrawalState; txHash: string | null },
  now: Date,
): Promise<void> {
  // A deposit refund is no request of the account's: no listed type tells it (the account sees the deposit's state).
  if (row.kind === 'refund') return;
  const data = {
    withdrawal_id: row.id,
    kind: row.kind,
    from: move.from,
    to: move.to,
    amount_micro: row.amount_micro.toString(),
    tx_hash: move.txHash,
  };
  await emitWebhookEvent(trx, row.account_id, EVENT_TYPE[row.kind], data, now);
}
