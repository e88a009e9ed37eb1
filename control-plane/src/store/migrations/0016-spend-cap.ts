import type { Kysely } from 'kysely';

// The spend-rate cap (issue 10 item 5): each account's own ceiling on the summed hourly rate of its unstopped jobs,
// micro-USDC per hour. Null: the account follows the operator's default (ARK_SPEND_RATE_CAP_MICRO_PER_HOUR), so a
// change of the default reaches every account that never set its own.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('accounts').addColumn('spend_cap_micro_per_hour', 'bigint').execute();
  // Each reservation sums the rates of the account's unstopped jobs: found by state, not by walking its history.
  await db.schema.createIndex('jobs_account_state').on('jobs').columns(['account_id', 'state']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('jobs_account_state').execute();
  await db.schema.alterTable('accounts').dropColumn('spend_cap_micro_per_hour').execute();
}
