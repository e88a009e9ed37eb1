import type { PayoutWallet } from '../../chain/payout-wallet.js';
import type { WithdrawalState } from '../../domain/withdrawals/states.js';
import type { KeysetPosition } from '../../store/keyset.js';
import { matureDueLots } from '../../store/pending-earnings.js';
import { pendingPayoutTotal } from '../../store/withdrawals.js';
import type { CommitHook } from '../../store/transaction.js';
import { commitMapped } from '../records.js';
import { payoutRail, type WithdrawalDeps } from './deps.js';
import { Payer, type PayerEvents } from './payer.js';
import { accountWithdrawals, hostEarnings, withdrawalOf, withdrawalsInState } from './reads.js';
import { toWithdrawalRecord, type WithdrawalRecord } from './records.js';
import { requestWithdrawal, type WithdrawalRequestInput } from './request.js';
import { type ReviewInput, type ReviewResult, reviewWithdrawal } from './review.js';

export { earningsPosition, type EarningsItem, type HostEarnings } from './reads.js';
export type { ReviewResult } from './review.js';
export type { JobEarning, WithdrawalRecord } from './records.js';
export type { PayerEvents, PayerStepResult } from './payer.js';

/** Money out (issue 12): requests, reads, the admin's review, and the payer the worker runs. */
export function buildWithdrawalServices(deps: WithdrawalDeps) {
  return {
    request: async (input: WithdrawalRequestInput, commit?: CommitHook<WithdrawalRecord>): Promise<WithdrawalRecord> =>
      toWithdrawalRecord(await requestWithdrawal(deps, input, commitMapped(commit, toWithdrawalRecord))),
    review: (input: ReviewInput, commit?: CommitHook<ReviewResult>) => reviewWithdrawal(deps, input, commit),
    get: (accountId: string, id: string) => withdrawalOf(deps, accountId, id),
    list: (accountId: string, after: KeysetPosition | null, fetch: number) => accountWithdrawals(deps, accountId, after, fetch),
    listByState: (state: WithdrawalState | null, after: KeysetPosition | null, fetch: number) =>
      withdrawalsInState(deps, state, after, fetch),
    earnings: (hostAccountId: string, after: KeysetPosition | null, fetch: number) => hostEarnings(deps, hostAccountId, after, fetch),
    /** The primary network's USDC and what the payout wallet still owes on it; null without ARK_CHAINS. */
    async pending() {
      const rail = payoutRail(deps);
      if (rail === null) return null;
      return { rail, ...(await pendingPayoutTotal(deps.store.db, rail.network.chainId)) };
    },
    /** Pending host earnings whose time came become payable, each lot once (workers/earnings.ts). */
    matureEarnings: (now: Date) => matureDueLots(deps.store, now),
    /** The payer over a wallet the composition root built (one per process; the lease picks who pays). */
    payer: (wallet: PayoutWallet, events?: PayerEvents) => new Payer(deps, wallet, { events }),
  };
}

export type WithdrawalServices = ReturnType<typeof buildWithdrawalServices>;
