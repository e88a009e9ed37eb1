import type { Kysely } from 'kysely';

// Money in by deposit: one derived address per account, the deposits seen on chain, and each watched network's
// scan cursor and lease.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('deposit_addresses')
    .addColumn('account_id', 'text', (c) => c.primaryKey())
    .addColumn('derivation_index', 'bigint', (c) => c.notNull().unique())
    .addColumn('address', 'text', (c) => c.notNull().unique())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();

  // One row: the next child index to hand out (a portable sequence: both dialects, one UPDATE ... RETURNING).
  await db.schema
    .createTable('deposit_address_sequence')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('next_index', 'bigint', (c) => c.notNull())
    .execute();
  await db.insertInto('deposit_address_sequence').values({ name: 'deposit', next_index: 0n }).execute();

  await db.schema
    .createTable('chain_deposits')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('chain_id', 'bigint', (c) => c.notNull())
    .addColumn('network', 'text', (c) => c.notNull())
    .addColumn('tx_hash', 'text', (c) => c.notNull())
    // -1 for a plain native transfer.
    .addColumn('log_index', 'bigint', (c) => c.notNull())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('address', 'text', (c) => c.notNull())
    .addColumn('asset', 'text', (c) => c.notNull())
    .addColumn('token_address', 'text')
    // The raw chain amount as a decimal string: 18-decimal amounts pass int8.
    .addColumn('amount_raw', 'text', (c) => c.notNull())
    .addColumn('decimals', 'bigint', (c) => c.notNull())
    // Stablecoins: known when seen. Native coins: priced at finality.
    .addColumn('amount_micro', 'bigint')
    .addColumn('block_number', 'bigint', (c) => c.notNull())
    .addColumn('block_hash', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('price_answer', 'text')
    .addColumn('price_decimals', 'bigint')
    .addColumn('seen_at', 'text', (c) => c.notNull())
    .addColumn('final_at', 'text')
    .addColumn('credited_at', 'text')
    .addColumn('posting_id', 'text')
    .execute();
  // Exactly once: (chain id, tx hash, log index); the ledger posting carries the same key.
  await db.schema.createIndex('chain_deposits_key').on('chain_deposits').columns(['chain_id', 'tx_hash', 'log_index']).unique().execute();
  await db.schema.createIndex('chain_deposits_account').on('chain_deposits').columns(['account_id', 'seen_at', 'id']).execute();
  await db.schema.createIndex('chain_deposits_pending').on('chain_deposits').columns(['chain_id', 'state', 'block_number']).execute();
  await db.schema.createIndex('chain_deposits_held').on('chain_deposits').columns(['state', 'account_id', 'final_at']).execute();

  await db.schema
    .createTable('chain_watch_state')
    .addColumn('chain_id', 'bigint', (c) => c.primaryKey())
    .addColumn('network', 'text', (c) => c.notNull())
    // The last block fully read, and its hash (a different hash there later means a reorg).
    .addColumn('cursor_block', 'bigint', (c) => c.notNull())
    .addColumn('cursor_hash', 'text', (c) => c.notNull())
    .addColumn('head_block', 'bigint')
    .addColumn('finalized_block', 'bigint')
    .addColumn('finalized_advanced_at', 'text')
    // The replica whose watcher works this network now, until lease_until.
    .addColumn('lease_owner', 'text')
    .addColumn('lease_until', 'text')
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('chain_watch_state').execute();
  await db.schema.dropTable('chain_deposits').execute();
  await db.schema.dropTable('deposit_address_sequence').execute();
  await db.schema.dropTable('deposit_addresses').execute();
}
