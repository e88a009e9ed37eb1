import type { LedgerSummary } from '@ark/shared';
import type { Credited, LedgerVerification, OwnerBalances } from '../services/billing/ledger.js';
import type { LedgerSummaryRecord } from '../services/operations/index.js';

// The ledger as operators read it: the platform's books (GET /api/v1/admin/ledger/summary, `ark-cp ledger summary`)
// and what `ark-cp ledger credit|balance|verify` print. A host's earnings are in views/withdrawals.ts.

export function ledgerSummaryView(summary: LedgerSummaryRecord): LedgerSummary {
  const t = summary.totals;
  return {
    as_of: summary.asOf.toISOString(),
    from: summary.from,
    to: summary.to,
    totals: {
      available_micro: t.availableMicro.toString(),
      held_micro: t.heldMicro.toString(),
      pending_micro: t.pendingMicro.toString(),
      payable_micro: t.payableMicro.toString(),
      locked_micro: t.lockedMicro.toString(),
      fees_micro: t.feesMicro.toString(),
      money_in_micro: t.moneyInMicro.toString(),
      money_out_micro: t.moneyOutMicro.toString(),
    },
    balanced: summary.balanced,
    days: summary.days.map((d) => ({
      day: d.day,
      fees_earned_micro: d.feesMicro.toString(),
      money_in_micro: d.inMicro.toString(),
      money_out_micro: d.outMicro.toString(),
      postings: Number(d.postings),
    })),
  };
}

export interface CreditOutput {
  account_id: string;
  posting_id: string;
  available_micro: string;
}

/** `ledger credit`: the posting and the balance after it. */
export const creditView = (accountId: string, credited: Credited): CreditOutput => ({
  account_id: accountId,
  posting_id: credited.postingId,
  available_micro: credited.availableMicro.toString(),
});

export interface BalanceOutput {
  account_id: string;
  available_micro: string;
  held_micro: string;
  pending_micro: string;
  payable_micro: string;
}

/** `ledger balance`: an account's balances as the ledger holds them, a host's payable included. */
export const balanceView = (accountId: string, balances: OwnerBalances): BalanceOutput => ({
  account_id: accountId,
  available_micro: balances.availableMicro.toString(),
  held_micro: balances.heldMicro.toString(),
  pending_micro: balances.pendingMicro.toString(),
  payable_micro: balances.payableMicro.toString(),
});

/** `ledger verify`: every cached balance recomputed from the postings. */
export const ledgerVerificationView = (report: LedgerVerification) => ({
  ok: report.ok,
  accounts: report.accounts.toString(),
  postings: report.postings.toString(),
  sum_micro: report.sumMicro.toString(),
  discrepancies: report.discrepancies.map((d) => ({
    key: d.key,
    problem: d.problem,
    cached_micro: d.cachedMicro.toString(),
    recomputed_micro: d.recomputedMicro.toString(),
  })),
});
