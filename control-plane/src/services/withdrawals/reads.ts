import type { WithdrawalState } from '../../domain/withdrawals/states.js';
import { DomainError } from '../../errors.js';
import type { KeysetPosition } from '../../store/keyset.js';
import { balanceOf } from '../../store/ledger.js';
import { creditsOfAccount } from '../../store/job-credits.js';
import { pendingSummaryOf } from '../../store/pending-earnings.js';
import { type JobCreditRecord, toJobCreditRecord } from '../billing/records.js';
import { ledgerAccounts } from '../../domain/ledger/accounts.js';
import { findWithdrawal, jobEarnings, listAccountWithdrawals, listWithdrawalsByState, withdrawalTotals } from '../../store/withdrawals.js';
import type { WithdrawalDeps } from './deps.js';
import { type JobEarning, toJobEarning, toWithdrawalRecord, type WithdrawalRecord } from './records.js';

/** One of the caller's requests; anyone else's (or none) is NOT_FOUND, so existence never leaks. */
export async function withdrawalOf(deps: WithdrawalDeps, accountId: string, id: string): Promise<WithdrawalRecord> {
  const row = await findWithdrawal(deps.store.db, id);
  if (!row || row.account_id !== accountId) throw new DomainError('NOT_FOUND', 'No such withdrawal.');
  return toWithdrawalRecord(row);
}

export async function accountWithdrawals(
  deps: WithdrawalDeps,
  accountId: string,
  after: KeysetPosition | null,
  fetch: number,
): Promise<WithdrawalRecord[]> {
  return (await listAccountWithdrawals(deps.store.db, accountId, after, fetch)).map(toWithdrawalRecord);
}

export async function withdrawalsInState(
  deps: WithdrawalDeps,
  state: WithdrawalState | null,
  after: KeysetPosition | null,
  fetch: number,
): Promise<WithdrawalRecord[]> {
  return (await listWithdrawalsByState(deps.store.db, state, after, fetch)).map(toWithdrawalRecord);
}

export type EarningsItem = { kind: 'job'; job: JobEarning } | { kind: 'payout'; payout: WithdrawalRecord };

export interface HostEarnings {
  /** Charged, not matured yet (issue 24): automatic credits take from it first; no payout draws it. */
  pendingMicro: bigint;
  /** When the next pending lot becomes payable; null when nothing is pending. */
  nextMaturesAt: Date | null;
  payableMicro: bigint;
  /** Automatic credits taken from these earnings (issue 24 item 3), newest first. */
  credits: JobCreditRecord[];
  lockedMicro: bigint;
  paidOutMicro: bigint;
  /** Newest first, merged from the two histories; `fetch` rows at most. */
  items: EarningsItem[];
}

/** The position of a history item in the merged order: [at, id] descending. */
export function earningsPosition(item: EarningsItem): [string, string] {
  return item.kind === 'job' ? [item.job.lastAt, item.job.jobId] : [item.payout.createdAt, item.payout.id];
}

/**
 * A host's money: pending (not matured), payable now, locked in open payouts, paid out, and one history of metered earnings per job and
 * payouts, newest first. Both histories are read past the cursor in the same order and merged, so paging is exact.
 */
export async function hostEarnings(
  deps: WithdrawalDeps,
  hostAccountId: string,
  after: KeysetPosition | null,
  fetch: number,
): Promise<HostEarnings> {
  const db = deps.store.db;
  const [pending, credits, payableMicro, totals, jobs, payouts] = await Promise.all([
    pendingSummaryOf(db, hostAccountId),
    creditsOfAccount(db, hostAccountId, 'host', Math.max(1, fetch - 1)),
    balanceOf(db, ledgerAccounts.payable(hostAccountId)),
    withdrawalTotals(db, hostAccountId, 'payout'),
    jobEarnings(db, hostAccountId, after, fetch),
    listAccountWithdrawals(db, hostAccountId, after, fetch + 1),
  ]);
  const items: EarningsItem[] = [
    ...jobs.map((job): EarningsItem => ({ kind: 'job', job: toJobEarning(job) })),
    ...payouts.filter((p) => p.kind === 'payout').map((payout): EarningsItem => ({ kind: 'payout', payout: toWithdrawalRecord(payout) })),
  ];
  items.sort((a, b) => {
    const [atA, idA] = earningsPosition(a);
    const [atB, idB] = earningsPosition(b);
    return atA === atB ? (idA < idB ? 1 : idA > idB ? -1 : 0) : atA < atB ? 1 : -1;
  });
  return {
    pendingMicro: pending.pendingMicro,
    nextMaturesAt: pending.nextMaturesAt,
    payableMicro,
    credits: credits.map(toJobCreditRecord),
    lockedMicro: totals.lockedMicro,
    paidOutMicro: totals.paidMicro,
    items: items.slice(0, fetch),
  };
}
