import { iso } from '../clock.js';
import type { RateSnapshot } from '../domain/metering/charges.js';
import { COMMITTING_STATES } from '../domain/jobs/spend-cap.js';
import { type Executor, isPostgres, type Tx } from './db.js';

// The spend-rate cap's rows: the account's own cap (accounts.spend_cap_micro_per_hour, null: the operator's default)
// and the rates of its jobs that count against it.

/**
 * The account's own cap, its row held for the caller's transaction: reservations and cap changes of one account queue
 * behind each other (Postgres FOR NO KEY UPDATE, so inserts elsewhere that reference the account are not blocked;
 * SQLite serialises writers). Undefined for an unknown account.
 */
export async function lockSpendCap(trx: Tx, accountId: string): Promise<{ capMicroPerHour: bigint | null } | undefined> {
  let query = trx.selectFrom('accounts').select('spend_cap_micro_per_hour').where('id', '=', accountId);
  if (isPostgres(trx)) query = query.forNoKeyUpdate();
  const row = await query.executeTakeFirst();
  return row ? { capMicroPerHour: row.spend_cap_micro_per_hour } : undefined;
}

/** The account's own cap without a lock (reads); undefined for an unknown account. */
export async function spendCapOf(db: Executor, accountId: string): Promise<{ capMicroPerHour: bigint | null } | undefined> {
  const row = await db.selectFrom('accounts').select('spend_cap_micro_per_hour').where('id', '=', accountId).executeTakeFirst();
  return row ? { capMicroPerHour: row.spend_cap_micro_per_hour } : undefined;
}

export async function setSpendCap(trx: Tx, accountId: string, capMicroPerHour: bigint | null, now: Date): Promise<void> {
  await trx
    .updateTable('accounts')
    .set({ spend_cap_micro_per_hour: capMicroPerHour, updated_at: iso(now) })
    .where('id', '=', accountId)
    .execute();
}

/** The snapshotted rates of the account's jobs that count against its cap (jobs_account_state index). */
export async function committingRatesOf(db: Executor, accountId: string): Promise<RateSnapshot[]> {
  const rows = await db
    .selectFrom('jobs')
    .select(['machine_rate_micro_per_hour', 'platform_fee_bps'])
    .where('account_id', '=', accountId)
    .where('state', 'in', [...COMMITTING_STATES])
    .execute();
  return rows.map((row) => ({ machineRateMicroPerHour: row.machine_rate_micro_per_hour, platformFeeBps: row.platform_fee_bps }));
}
