import type { LEDGER_ACCOUNT_KINDS } from '../../domain/ledger/accounts.js';
import { iso } from '../../clock.js';
import { DomainError } from '../../errors.js';
import type { Store } from '../../store/db.js';
import { balancesByKind, type DailyFlows, dailyFlows, externalFlows } from '../../store/ledger-summary.js';
import type { Clock } from '../../clock.js';

/** The longest window one summary reads: a year and a day, so a leap year fits. */
export const LEDGER_SUMMARY_DAYS_MAX = 366;
const DEFAULT_DAYS = 30;
const DAY_MS = 86_400_000;

export interface LedgerSummaryRecord {
  asOf: Date;
  from: string;
  to: string;
  totals: {
    availableMicro: bigint;
    heldMicro: bigint;
    pendingMicro: bigint;
    payableMicro: bigint;
    lockedMicro: bigint;
    feesMicro: bigint;
    moneyInMicro: bigint;
    moneyOutMicro: bigint;
  };
  /** Every balance summed is zero (money neither made nor lost inside the ledger). */
  balanced: boolean;
  days: DailyFlows[];
}

/**
 * The platform's books: what renters hold (available), what running jobs hold, what hosts are owed (payable), what
 * withdrawals have locked, the fees earned, and the money in and out through `external`, now; and per UTC day of
 * [from, to] the fees earned and the money in and out. Days are UTC calendar days, `to` inclusive.
 */
export async function ledgerSummary(
  deps: { store: Store; clock: Clock },
  query: { from?: string; to?: string },
): Promise<LedgerSummaryRecord> {
  const now = deps.clock.now();
  const to = query.to ?? iso(now).slice(0, 10);
  const toMs = dayStartMs(to, 'to');
  const from = query.from ?? iso(new Date(toMs - (DEFAULT_DAYS - 1) * DAY_MS)).slice(0, 10);
  const fromMs = dayStartMs(from, 'from');
  if (fromMs > toMs) throw new DomainError('VALIDATION_FAILED', 'querystring/from must not be after to');
  if ((toMs - fromMs) / DAY_MS + 1 > LEDGER_SUMMARY_DAYS_MAX) {
    throw new DomainError('VALIDATION_FAILED', `querystring/from the window may span at most ${LEDGER_SUMMARY_DAYS_MAX} days`);
  }
  const db = deps.store.db;
  const balances = await balancesByKind(db);
  const flows = await externalFlows(db);
  const days = await dailyFlows(db, {
    from: iso(new Date(fromMs)),
    to: iso(new Date(toMs + DAY_MS)),
  });
  const of = (kind: (typeof LEDGER_ACCOUNT_KINDS)[number]) => balances.get(kind) ?? 0n;
  let sum = 0n;
  for (const total of balances.values()) sum += total;
  return {
    asOf: now,
    from,
    to,
    totals: {
      availableMicro: of('available'),
      heldMicro: of('hold'),
      pendingMicro: of('pending'),
      payableMicro: of('payable'),
      lockedMicro: of('lock'),
      feesMicro: of('fees'),
      moneyInMicro: flows.inMicro,
      moneyOutMicro: flows.outMicro,
    },
    balanced: sum === 0n,
    days,
  };
}

/** Midnight UTC of a YYYY-MM-DD day that exists (2026-02-30 is refused, not rolled over). */
function dayStartMs(day: string, field: string): number {
  const ms = Date.parse(`${day}T00:00:00.000Z`);
  if (Number.isNaN(ms) || iso(new Date(ms)).slice(0, 10) !== day)
    throw new DomainError('VALIDATION_FAILED', `querystring/${field} is not a calendar day`);
  return ms;
}
