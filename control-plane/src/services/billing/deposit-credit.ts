import { ledgerAccounts } from '../../domain/ledger/accounts.js';
import { MAX_TRANSFER_MICRO } from '../../domain/ledger/postings.js';
import { chainCreditRef, decideFinalDeposit, heldDepositFits } from '../../domain/payments/deposits.js';
import type { Tx } from '../../store/db.js';
import {
  accountsWithHeldDeposits,
  type DepositRow,
  finishDeposit,
  heldDepositsOf,
  lockDeposit,
  lockedAvailableMicro,
  olderHeldExists,
} from '../../store/deposits.js';
import { transfer } from '../../store/ledger.js';
import { transact } from '../../store/transaction.js';
import { emitWebhookEvent } from '../../store/webhooks.js';
import type { DepositDeps } from './deposit-deps.js';

export type FinalOutcome = 'credited' | 'held' | 'below_minimum' | 'already_final';

/**
 * A SEEN deposit whose block is final and canonical: credit it, hold it over the cap, or record it below the
 * minimum, in one transaction. The posting (external -> available) carries the exactly-once key
 * (chain id, tx hash, log index), and the state moves from SEEN only once, so a retry or a second replica
 * changes nothing.
 */
export function settleFinalDeposit(
  deps: DepositDeps,
  depositId: string,
  valued: { amountMicro: bigint; price: { answer: bigint; decimals: number } | null },
): Promise<FinalOutcome> {
  const now = deps.clock.now();
  return transact(deps.store, async (trx) => {
    const row = await lockDeposit(trx, depositId);
    if (row?.state !== 'SEEN') return 'already_final';
    const available = await lockedAvailableMicro(trx, row.account_id);
    const decision = decideFinalDeposit({
      amountMicro: valued.amountMicro,
      minDepositMicro: deps.payments.minDepositMicro,
      balanceCapMicro: deps.payments.balanceCapMicro,
      availableMicro: available,
      olderHeld: await olderHeldExists(trx, row.account_id, row.id),
      maxCreditMicro: MAX_TRANSFER_MICRO,
    });
    const base = { amountMicro: valued.amountMicro, price: valued.price, at: now };
    if (decision.action === 'below_minimum') {
      await finishDeposit(trx, row.id, 'SEEN', { ...base, state: 'BELOW_MINIMUM', reason: 'below_minimum', postingId: null });
      return 'below_minimum';
    }
    if (decision.action === 'hold') {
      await finishDeposit(trx, row.id, 'SEEN', { ...base, state: 'HELD', reason: decision.reason, postingId: null });
      return 'held';
    }
    // A funding credit: while admission is paused it waits HELD (credited on resume) unless the account holds an
    // acceptance authorization for it, consumed here with the credit.
    if (!(await deps.admissions.tryAdmit(trx, fundingCredit(row)))) {
      await finishDeposit(trx, row.id, 'SEEN', { ...base, state: 'HELD', reason: ADMISSIONS_PAUSED_REASON, postingId: null });
      return 'held';
    }
    const postingId = await post(trx, row, valued.amountMicro, now);
    await finishDeposit(trx, row.id, 'SEEN', { ...base, state: 'CREDITED', reason: null, postingId });
    return 'credited';
  });
}

/**
 * Credits HELD deposits that fit under the cap now and that admission lets in, per account oldest first; the first that does not fit stops
 * that account (a younger deposit never jumps the queue). Returns how many were credited.
 */
export async function releaseHeldDeposits(deps: DepositDeps, limits = { accounts: 100, perAccount: 50 }): Promise<number> {
  let credited = 0;
  for (const accountId of await accountsWithHeldDeposits(deps.store.db, limits.accounts)) {
    const now = deps.clock.now();
    credited += await transact(deps.store, async (trx) => {
      let available = await lockedAvailableMicro(trx, accountId);
      let count = 0;
      for (const held of await heldDepositsOf(trx, accountId, limits.perAccount)) {
        const amount = held.amount_micro ?? 0n;
        if (!heldDepositFits(amount, available, deps.payments.balanceCapMicro, MAX_TRANSFER_MICRO)) break;
        // Paused admission keeps the account's queue waiting, as the cap does.
        if (!(await deps.admissions.tryAdmit(trx, fundingCredit(held)))) break;
        const postingId = await post(trx, held, amount, now);
        const moved = await finishDeposit(trx, held.id, 'HELD', {
          state: 'CREDITED',
          amountMicro: amount,
          reason: null,
          price: null,
          postingId,
          at: now,
        });
        if (!moved) throw new Error(`held deposit ${held.id} changed state under its lock`);
        available += amount;
        count++;
      }
      return count;
    });
  }
  return credited;
}

/** The reason a deposit is HELD while admission is paused. */
export const ADMISSIONS_PAUSED_REASON = 'admissions_paused';

const fundingCredit = (row: DepositRow) =>
  ({ accountId: row.account_id, kind: 'funding_credit', anyOfAccount: true, reference: `deposit:${row.id}` }) as const;

async function post(trx: Tx, row: DepositRow, amountMicro: bigint, at: Date): Promise<string> {
  const posted = await transfer(trx, {
    from: ledgerAccounts.external(`chain:${row.chain_id}`),
    to: ledgerAccounts.available(row.account_id),
    amountMicro,
    kind: 'deposit',
    reference: `deposit:${row.id}`,
    externalRef: chainCreditRef(Number(row.chain_id), row.tx_hash, Number(row.log_index)),
    at,
  });
  // Told in the credit's own transaction (issue 10): the event exists exactly when the credit does.
  await emitWebhookEvent(
    trx,
    row.account_id,
    'deposit.credited',
    { deposit_id: row.id, network: row.network, asset: row.asset, tx_hash: row.tx_hash, credited_micro: amountMicro.toString() },
    at,
  );
  return posted.postingId;
}
