import { sql } from 'kysely';
import type { Executor } from './db.js';

// What the treasury's reconciliation reads from the store (issue 22): the ledger's liabilities and the payout wallets
// that have paid. Read-only; both dialects.

export interface LedgerLiabilities {
  availableMicro: bigint;
  heldMicro: bigint;
  pendingMicro: bigint;
  payableMicro: bigint;
  lockedMicro: bigint;
  /** Amounts of withdrawals and payouts SIGNED or BROADCAST: their transfer may already be on chain. */
  inFlightMicro: bigint;
}

/**
 * The liabilities in one statement, so the locks and the in-flight requests come from one snapshot on PostgreSQL
 * too (read committed gives each statement its own): a payout confirmed between two reads would otherwise be counted
 * as owed and as paid.
 */
export async function ledgerLiabilities(db: Executor): Promise<LedgerLiabilities> {
  const kind = (k: string) => sql<string>`(select coalesce(sum(balance_micro), 0) from ledger_accounts where kind = ${k})`;
  const row = (
    await sql<Record<'available' | 'held' | 'pending' | 'payable' | 'locked' | 'in_flight', bigint | string | number>>`
      select
        ${kind('available')} as available,
        ${kind('hold')} as held,
        ${kind('pending')} as pending,
        ${kind('payable')} as payable,
        ${kind('lock')} as locked,
        (select coalesce(sum(amount_micro), 0) from withdrawals where state in ('SIGNED', 'BROADCAST')) as in_flight`.execute(db)
  ).rows[0];
  if (!row) throw new Error('the liabilities query returned no row');
  return {
    availableMicro: BigInt(row.available),
    heldMicro: BigInt(row.held),
    pendingMicro: BigInt(row.pending),
    payableMicro: BigInt(row.payable),
    lockedMicro: BigInt(row.locked),
    inFlightMicro: BigInt(row.in_flight),
  };
}

/** The address each network's payer last signed with (lower-case): a wallet the key file no longer names may still hold funds. */
export async function payoutWalletAddresses(db: Executor): Promise<string[]> {
  const rows = await db.selectFrom('payout_wallet_state').select('payer_address').distinct().execute();
  return rows.map((r) => r.payer_address.toLowerCase());
}
