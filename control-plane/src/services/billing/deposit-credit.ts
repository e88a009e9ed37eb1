import { ledgerAccounts } from '../../domain/ledger/accounts.js';
import { MAX_TRANSFER_MICRO } from '../../domain/ledger/postings.js';
import {
  chainCreditRef,
  decideFinalDeposit,
  depositMoneyRef,
  HOLD_REASON,
  heldDepositFits,
  largestReleasable,
} from '../../domain/payments/deposits.js';
import type { Tx } from '../../store/db.js';
import {
  accountsWithHeldDeposits,
  belowMinimumDepositsOf,
  type DepositRow,
  type FinalUpdate,
  finishDeposit,
  heldDepositsOf,
  lockDeposit,
  lockedAvailableMicro,
} from '../../store/deposits.js';
import { transfer } from '../../store/ledger.js';
import { transact } from '../../store/transaction.js';
import { emitWebhookEvent } from '../../store/webhooks.js';
import type { DepositDeps } from './deposit-deps.js';

export type FinalOutcome = 'credited' | 'held' | 'below_minimum' | 'already_final';

/** Small deposits of one account summed per decision (a bound on the rows one transaction touches). */
const BELOW_MINIMUM_BATCH = 200;
/** HELD deposits of one account looked at per transaction. */
const HELD_PER_ACCOUNT = 50;

/**
 * A SEEN deposit whose block is final and canonical: credit it, hold it over the cap, or record it below the
 * minimum, in one transaction. The account's older HELD deposits that fit now are credited first (oldest first), so
 * fairness holds, but one that does not fit holds nothing back. Deposits under the minimum add up: once the account's
 * BELOW_MINIMUM deposits and this one reach the minimum, each is credited with its own posting. Every posting
 * (external -> available) carries its deposit's exactly-once key (chain id, tx hash, log index), and the state moves
 * from SEEN only once, so a retry or a second replica changes nothing.
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
    let available = await lockedAvailableMicro(trx, row.account_id);
    available += (await creditHeldThatFit(deps, trx, row.account_id, available, now)).creditedMicro;
    const small = await belowMinimumDepositsOf(trx, row.account_id, BELOW_MINIMUM_BATCH);
    const decision = decideFinalDeposit({
      amountMicro: valued.amountMicro,
      minDepositMicro: deps.payments.minDepositMicro,
      belowMinimumMicro: small.reduce((sum, d) => sum + (d.amount_micro ?? 0n), 0n),
      balanceCapMicro: deps.payments.balanceCapMicro,
      availableMicro: available,
      maxCreditMicro: MAX_TRANSFER_MICRO,
    });
    const base = { amountMicro: valued.amountMicro, price: valued.price, at: now };
    if (decision.action === 'below_minimum') {
      await finishDeposit(trx, row.id, 'SEEN', 'BELOW_MINIMUM', { ...base, reason: HOLD_REASON.belowMinimum, postingId: null });
      return 'below_minimum';
    }
    const joined = decision.joinBelowMinimum ? small : [];
    const holdAll = async (reason: string) => {
      await finishDeposit(trx, row.id, 'SEEN', 'HELD', { ...base, reason, postingId: null });
      for (const d of joined) await moveSmall(trx, d, 'HELD', { reason, postingId: null, at: now });
      return 'held' as const;
    };
    if (decision.action === 'hold') return holdAll(decision.reason);
    // A funding credit: while admission is paused it waits HELD (credited on resume) unless the account holds an
    // acceptance authorization for it, consumed here with the credit (one for the deposit and the small ones it joins).
    if (!(await deps.admissions.tryAdmit(trx, fundingCredit(row)))) return holdAll(HOLD_REASON.admissionsPaused);
    const postingId = await postDeposit(trx, row, valued.amountMicro, now);
    await finishDeposit(trx, row.id, 'SEEN', 'CREDITED', { ...base, reason: null, postingId });
    for (const d of joined) {
      await moveSmall(trx, d, 'CREDITED', {
        reason: null,
        postingId: await postDeposit(trx, d, d.amount_micro ?? 0n, now),
        at: now,
      });
    }
    return 'credited';
  });
}

/**
 * Credits HELD deposits that fit under the cap now and that admission lets in, per account oldest first. One that
 * does not fit is passed over, never waited behind; one that can never fit (bigger than the cap) is left to an
 * operator and not even read. Returns how many were credited.
 */
export async function releaseHeldDeposits(deps: DepositDeps, limits = { accounts: 100 }): Promise<number> {
  let credited = 0;
  const largest = largestReleasable(deps.payments.balanceCapMicro, MAX_TRANSFER_MICRO);
  for (const accountId of await accountsWithHeldDeposits(deps.store.db, limits.accounts, largest)) {
    const now = deps.clock.now();
    credited += await transact(deps.store, async (trx) => {
      const available = await lockedAvailableMicro(trx, accountId);
      return (await creditHeldThatFit(deps, trx, accountId, available, now)).count;
    });
  }
  return credited;
}

/** In the caller's transaction, with the account's available row locked: its HELD deposits that fit, oldest first. */
async function creditHeldThatFit(
  deps: DepositDeps,
  trx: Tx,
  accountId: string,
  availableMicro: bigint,
  now: Date,
): Promise<{ count: number; creditedMicro: bigint }> {
  let creditedMicro = 0n;
  let count = 0;
  const largest = largestReleasable(deps.payments.balanceCapMicro, MAX_TRANSFER_MICRO);
  for (const held of await heldDepositsOf(trx, accountId, HELD_PER_ACCOUNT, largest)) {
    const amount = held.amount_micro ?? 0n;
    // A younger deposit that fits is never held behind an older one that does not.
    if (!heldDepositFits(amount, availableMicro + creditedMicro, deps.payments.balanceCapMicro, MAX_TRANSFER_MICRO)) continue;
    // Paused admission keeps every credit of the account waiting.
    if (!(await deps.admissions.tryAdmit(trx, fundingCredit(held)))) break;
    const postingId = await postDeposit(trx, held, amount, now);
    const moved = await finishDeposit(trx, held.id, 'HELD', 'CREDITED', {
      amountMicro: amount,
      reason: null,
      price: null,
      postingId,
      at: now,
    });
    if (!moved) throw new Error(`held deposit ${held.id} changed state under its lock`);
    creditedMicro += amount;
    count++;
  }
  return { count, creditedMicro };
}

/** A BELOW_MINIMUM deposit joins a decision: its amount (priced when it was final) stays. */
async function moveSmall(
  trx: Tx,
  row: DepositRow,
  to: 'CREDITED' | 'HELD',
  update: Pick<FinalUpdate, 'reason' | 'postingId' | 'at'>,
): Promise<void> {
  const moved = await finishDeposit(trx, row.id, 'BELOW_MINIMUM', to, { ...update, amountMicro: row.amount_micro, price: null });
  if (!moved) throw new Error(`small deposit ${row.id} changed state under its lock`);
}

export const fundingCredit = (row: DepositRow) =>
  ({ accountId: row.account_id, kind: 'funding_credit', anyOfAccount: true, reference: `deposit:${row.id}` }) as const;

/** The exactly-once key of a deposit's money entering the ledger now (see depositMoneyRef). */
export const depositRef = (row: DepositRow): string =>
  depositMoneyRef(chainCreditRef(Number(row.chain_id), row.tx_hash, Number(row.log_index)), row.refund_id);

/** external -> available, keyed by the deposit; the webhook event is told in the same transaction. */
export async function postDeposit(trx: Tx, row: DepositRow, amountMicro: bigint, at: Date): Promise<string> {
  const posted = await transfer(trx, {
    from: ledgerAccounts.external(`chain:${row.chain_id}`),
    to: ledgerAccounts.available(row.account_id),
    amountMicro,
    kind: 'deposit',
    reference: `deposit:${row.id}`,
    externalRef: depositRef(row),
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
