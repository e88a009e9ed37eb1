import { sql } from 'kysely';
import type { LedgerAccountKind } from '../domain/ledger/accounts.js';
import type { Executor } from './db.js';

// The platform's books read from the ledger (GET /api/v1/admin/ledger/summary, `ark-cp ledger summary`): balances
// summed per kind of account, and the money that moved per UTC day. Read-only; both dialects (timestamps are ISO
// text, so the day is the first ten characters).

/** Cached balances summed per kind of account. */
export async function balancesByKind(db: Executor): Promise<Map<LedgerAccountKind, bigint>> {
  const rows = await sql<{ kind: LedgerAccountKind; total: bigint | string | number }>`
    select kind, sum(balance_micro) as total from ledger_accounts group by kind`.execute(db);
  return new Map(rows.rows.map((r) => [r.kind, BigInt(r.total)]));
}

export interface ExternalFlows {
  /** Everything ever posted from an `external` account (deposits, top-ups) or from `adjustment` (operator credits). */
  inMicro: bigint;
  /** Everything ever posted to an `external` account (withdrawals, payouts) or to `adjustment`. */
  outMicro: bigint;
}

export async function externalFlows(db: Executor): Promise<ExternalFlows> {
  const rows = await sql<{ money_in: bigint | string | number | null; money_out: bigint | string | number | null }>`
    select
      sum(case when from_key like 'external:%' or from_key like 'adjustment:%' then amount_micro else 0 end) as money_in,
      sum(case when to_key like 'external:%' or to_key like 'adjustment:%' then amount_micro else 0 end) as money_out
    from ledger_postings`.execute(db);
  const row = rows.rows[0];
  return { inMicro: BigInt(row?.money_in ?? 0), outMicro: BigInt(row?.money_out ?? 0) };
}

export interface DailyFlows {
  day: string;
  feesMicro: bigint;
  inMicro: bigint;
  outMicro: bigint;
  postings: bigint;
}

/** Per UTC day in [from, to) (ISO timestamps), days with postings only, oldest first. */
export async function dailyFlows(db: Executor, input: { from: string; to: string }): Promise<DailyFlows[]> {
  type Raw = bigint | string | number | null;
  const rows = await sql<{ day: string; fees: Raw; money_in: Raw; money_out: Raw; postings: Raw }>`
    select substr(at, 1, 10) as day,
      sum(case when to_key like 'fees:%' then amount_micro else 0 end) as fees,
      sum(case when from_key like 'external:%' or from_key like 'adjustment:%' then amount_micro else 0 end) as money_in,
      sum(case when to_key like 'external:%' or to_key like 'adjustment:%' then amount_micro else 0 end) as money_out,
      count(*) as postings
    from ledger_postings
    where at >= ${input.from} and at < ${input.to}
    group by substr(at, 1, 10)
    order by day`.execute(db);
  return rows.rows.map((r) => ({
    day: r.day,
    feesMicro: BigInt(r.fees ?? 0),
    inMicro: BigInt(r.money_in ?? 0),
    outMicro: BigInt(r.money_out ?? 0),
    postings: BigInt(r.postings ?? 0),
  }));
}
