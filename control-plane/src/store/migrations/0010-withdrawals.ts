import type { Kysely } from 'kysely';

// Money out (issue 12): withdrawal and payout requests, every signed transaction of each (a replacement at the same
// nonce adds one), and the payout wallet's state per network: the payer's lease and the next nonce to pin.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('withdrawals')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('account_id', 'text', (c) => c.notNull())
    // withdrawal (renter, from available) or payout (host, from payable).
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('amount_micro', 'bigint', (c) => c.notNull())
    .addColumn('network', 'text', (c) => c.notNull())
    .addColumn('chain_id', 'bigint', (c) => c.notNull())
    .addColumn('token_address', 'text', (c) => c.notNull())
    .addColumn('withdrawal_address_id', 'text', (c) => c.notNull())
    // Lower-case 0x destination, and the address version the request was made against.
    .addColumn('address', 'text', (c) => c.notNull())
    .addColumn('address_version', 'bigint', (c) => c.notNull())
    // JSON array of hold reasons while UNSIGNED.
    .addColumn('hold_reasons', 'text', (c) => c.notNull())
    .addColumn('approved', 'bigint', (c) => c.notNull())
    .addColumn('reviewed_by', 'text')
    .addColumn('reviewed_at', 'text')
    .addColumn('review_reason', 'text')
    // Pinned with the first signed transaction, never changed after (a replacement reuses it).
    .addColumn('payer_address', 'text')
    .addColumn('nonce', 'bigint')
    .addColumn('raw_tx', 'text')
    .addColumn('tx_hash', 'text')
    .addColumn('max_fee_per_gas', 'text')
    .addColumn('max_priority_fee_per_gas', 'text')
    .addColumn('signed_at', 'text')
    .addColumn('broadcast_at', 'text')
    .addColumn('block_number', 'bigint')
    .addColumn('fee_wei', 'text')
    .addColumn('confirmed_at', 'text')
    .addColumn('failure_reason', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('withdrawals_account').on('withdrawals').columns(['account_id', 'created_at', 'id']).execute();
  await db.schema.createIndex('withdrawals_state').on('withdrawals').columns(['state', 'created_at', 'id']).execute();
  // A nonce of the payout wallet is pinned to one request only, ever.
  await db.schema.createIndex('withdrawals_nonce').on('withdrawals').columns(['chain_id', 'payer_address', 'nonce']).unique().execute();

  await db.schema
    .createTable('withdrawal_transactions')
    .addColumn('tx_hash', 'text', (c) => c.primaryKey())
    .addColumn('withdrawal_id', 'text', (c) => c.notNull())
    .addColumn('raw_tx', 'text', (c) => c.notNull())
    .addColumn('max_fee_per_gas', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .execute();
  await db.schema.createIndex('withdrawal_transactions_withdrawal').on('withdrawal_transactions').columns(['withdrawal_id']).execute();

  await db.schema
    .createTable('payout_wallet_state')
    .addColumn('chain_id', 'bigint', (c) => c.primaryKey())
    .addColumn('payer_address', 'text', (c) => c.notNull())
    .addColumn('next_nonce', 'bigint', (c) => c.notNull())
    .addColumn('lease_owner', 'text')
    .addColumn('lease_until', 'text')
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('payout_wallet_state').execute();
  await db.schema.dropTable('withdrawal_transactions').execute();
  await db.schema.dropTable('withdrawals').execute();
}
