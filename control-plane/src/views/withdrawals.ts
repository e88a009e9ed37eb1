import { jobCreditView } from './deposits.js';
import {
  type AdminWithdrawal,
  type EarningsItem,
  type HostEarnings,
  toDecimal,
  type Withdrawal,
  type WithdrawalAddress,
  type WithdrawalReviewResult,
} from '@ark/shared';
import type { WithdrawalAddressRecord } from '../services/accounts/records.js';
import type {
  EarningsItem as EarningsRecord,
  HostEarnings as HostEarningsRecord,
  ReviewResult,
  WithdrawalRecord,
} from '../services/withdrawals/index.js';

// Money out as the wire shows it (shared/src/http/withdrawals.ts, accounts.ts): the routes and `ark-cp` alike.

/** Contract part 7, Withdrawal: a withdrawal or payout as its account sees it. */
export function withdrawalView(w: WithdrawalRecord): Withdrawal {
  return {
    id: w.id,
    kind: w.kind,
    state: w.state,
    amount_micro: toDecimal(w.amountMicro),
    fee_micro: '0',
    network: w.network,
    chain_id: Number(w.chainId),
    asset: 'USDC',
    withdrawal_address_id: w.withdrawalAddressId,
    address: w.address,
    address_version: w.addressVersion.toString(),
    hold_reasons: w.holdReasons,
    tx_hash: w.txHash,
    nonce: w.nonce === null ? null : w.nonce.toString(),
    block_number: w.blockNumber === null ? null : w.blockNumber.toString(),
    failure_reason: w.failureReason,
    created_at: w.createdAt,
    updated_at: w.updatedAt,
    confirmed_at: w.confirmedAt,
  };
}

/** A request as the operators see it (the review queue, `ark-cp withdrawals list`): whose, and why it was held. */
export function adminWithdrawalView(w: WithdrawalRecord): AdminWithdrawal {
  return { ...withdrawalView(w), account_id: w.accountId, review_reason: w.reviewReason };
}

/** An admin's review of a held request: approved back to INTENT, or rejected (FAILED, the lock returned). */
export const withdrawalReviewView = (r: ReviewResult): WithdrawalReviewResult => ({
  id: r.id,
  kind: r.kind,
  decision: r.decision,
  state: r.state,
});

/** One line of a host's earnings history. */
export function earningsItemView(item: EarningsRecord): EarningsItem {
  if (item.kind === 'job') {
    return { kind: 'job' as const, job_id: item.job.jobId, earned_micro: toDecimal(item.job.earnedMicro), at: item.job.lastAt };
  }
  const p = item.payout;
  return { kind: 'payout' as const, withdrawal_id: p.id, amount_micro: toDecimal(p.amountMicro), state: p.state, at: p.createdAt };
}

/** A host's earnings around one page of its history (the page is paginated by the route). */
export function hostEarningsView(earnings: HostEarningsRecord, page: Pick<HostEarnings, 'items' | 'next_cursor'>): HostEarnings {
  return {
    pending_micro: toDecimal(earnings.pendingMicro),
    next_matures_at: earnings.nextMaturesAt === null ? null : earnings.nextMaturesAt.toISOString(),
    payable_micro: toDecimal(earnings.payableMicro),
    locked_micro: toDecimal(earnings.lockedMicro),
    paid_out_micro: toDecimal(earnings.paidOutMicro),
    ...page,
    credits: earnings.credits.map(jobCreditView),
  };
}

/** Contract part 7, WithdrawalAddress: an entry of the account's address book. */
export function withdrawalAddressView(a: WithdrawalAddressRecord): WithdrawalAddress {
  return {
    id: a.id,
    address: a.address,
    label: a.label,
    network: a.network,
    version: a.version.toString(),
    created_at: a.createdAt,
  };
}

/** `ark-cp payouts wallet`: the payout wallet on the primary network, its balances, and what it still owes. */
export const payoutWalletView = (
  wallet: { network: string; chainId: number; address: string; usdcMicro: bigint; nativeWei: bigint },
  owed: { count: bigint | number; amountMicro: bigint },
) => ({
  network: wallet.network,
  chain_id: wallet.chainId,
  address: wallet.address,
  usdc_balance_micro: wallet.usdcMicro.toString(),
  native_balance_wei: wallet.nativeWei.toString(),
  pending_requests: owed.count.toString(),
  pending_micro: owed.amountMicro.toString(),
  enough_usdc: wallet.usdcMicro >= owed.amountMicro,
});
