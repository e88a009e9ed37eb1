import type { Kysely } from 'kysely';

// Money in by x402 top-up: one intent per EIP-3009 authorization, keyed by (chain, token, payer, nonce), written
// before anything is broadcast, so a replay or a restart finds it and never settles it twice.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('x402_intents')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    .addColumn('chain_id', 'bigint', (c) => c.notNull())
    .addColumn('network', 'text', (c) => c.notNull())
    // Lower-case 0x addresses and the 32-byte nonce as lower-case hex.
    .addColumn('token', 'text', (c) => c.notNull())
    .addColumn('payer', 'text', (c) => c.notNull())
    .addColumn('nonce', 'text', (c) => c.notNull())
    .addColumn('pay_to', 'text', (c) => c.notNull())
    .addColumn('amount_micro', 'bigint', (c) => c.notNull())
    // Unix seconds as decimal strings (uint256 on chain).
    .addColumn('valid_after', 'text', (c) => c.notNull())
    .addColumn('valid_before', 'text', (c) => c.notNull())
    .addColumn('signature', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    // The settlement transaction: signed and stored before it is broadcast (a restart re-sends these bytes).
    .addColumn('gas_wallet', 'text')
    .addColumn('gas_nonce', 'bigint')
    .addColumn('raw_tx', 'text')
    .addColumn('tx_hash', 'text')
    .addColumn('block_number', 'bigint')
    .addColumn('block_hash', 'text')
    .addColumn('log_index', 'bigint')
    .addColumn('credited_micro', 'bigint')
    .addColumn('posting_id', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('credited_at', 'text')
    .execute();
  // Exactly one intent per authorization; never keyed by signature bytes (they are malleable).
  await db.schema.createIndex('x402_intents_key').on('x402_intents').columns(['chain_id', 'token', 'payer', 'nonce']).unique().execute();
  await db.schema.createIndex('x402_intents_open').on('x402_intents').columns(['state', 'updated_at']).execute();
  await db.schema.createIndex('x402_intents_account').on('x402_intents').columns(['account_id', 'created_at', 'id']).execute();
  // One settlement transaction per gas-wallet nonce, whichever replica signed it.
  await db.schema.createIndex('x402_intents_gas_nonce').on('x402_intents').columns(['gas_wallet', 'gas_nonce']).unique().execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('x402_intents').execute();
}
