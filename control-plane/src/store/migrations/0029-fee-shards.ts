import { type Kysely, PostgresAdapter } from 'kysely';

// The platform's fees over 16 accounts on Postgres (domain/ledger/accounts.ts, FEE_SHARDS): every metered charge
// credits the fees, and replicas charging at once queued on the one row's lock. Each charging transaction credits one
// shard (store/job-charges.ts, feesAccountOf), so the shards exist before any charge: a group of charges inserts its
// postings before it locks the accounts, and a posting needs its account. `fees:platform` (shard 0) may exist already.
// SQLite has one writer and keeps to shard 0, created by the first charge as before.

const SHARDS = 16;

export async function up(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  const at = new Date().toISOString();
  await db
    .insertInto('ledger_accounts')
    .values(
      Array.from({ length: SHARDS }, (_, shard) => {
        const owner = shard === 0 ? 'platform' : `platform.${shard}`;
        return { key: `fees:${owner}`, owner_id: owner, kind: 'fees', account_id: null, balance_micro: 0n, updated_at: at };
      }),
    )
    .onConflict((oc) => oc.column('key').doNothing())
    .execute();
}
