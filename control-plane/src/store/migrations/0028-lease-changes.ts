import type { Kysely } from 'kysely';

// Leases held by one replica at a time (the chain watcher's per network, the payer's per network) get a fencing
// token that grows by one at every takeover, and every takeover is logged with the lease it ended: the previous
// holder and until when it held it. The cluster test (test/cluster) checks from this log that no lease was ever
// held by two replicas at once (a takeover never happens before the previous holder's lease ran out).

export async function up(db: Kysely<any>): Promise<void> {
  for (const table of ['chain_watch_state', 'payout_wallet_state']) {
    await db.schema
      .alterTable(table)
      .addColumn('lease_token', 'bigint', (c) => c.notNull().defaultTo(0))
      .execute();
  }
  await db.schema
    .createTable('lease_changes')
    .addColumn('id', 'text', (c) => c.primaryKey())
    /** Which lease: 'chain_watch:<chain id>' or 'payer:<chain id>'. */
    .addColumn('lease', 'text', (c) => c.notNull())
    .addColumn('owner', 'text', (c) => c.notNull())
    .addColumn('token', 'bigint', (c) => c.notNull())
    .addColumn('acquired_at', 'text', (c) => c.notNull())
    .addColumn('until', 'text', (c) => c.notNull())
    /** The holder before (null: free or released) and the end of its lease. */
    .addColumn('previous_owner', 'text')
    .addColumn('previous_until', 'text')
    .execute();
  await db.schema.createIndex('lease_changes_lease').on('lease_changes').columns(['lease', 'token']).unique().execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('lease_changes').execute();
  for (const table of ['chain_watch_state', 'payout_wallet_state']) await db.schema.alterTable(table).dropColumn('lease_token').execute();
}
