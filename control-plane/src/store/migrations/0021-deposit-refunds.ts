import type { Kysely } from 'kysely';

// Deposits that never block (issue 22): each deposit's sender (a refund goes back to it), the refund that returns it,
// and the operator who resolved a HELD deposit by an override credit or a refund, and why. Deposits seen before this
// migration have no sender: they can be credited by an operator, not refunded.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('chain_deposits').addColumn('from_address', 'text').execute();
  await db.schema.alterTable('chain_deposits').addColumn('refund_id', 'text').execute();
  await db.schema.alterTable('chain_deposits').addColumn('resolved_by', 'text').execute();
  await db.schema.alterTable('chain_deposits').addColumn('resolution_reason', 'text').execute();
  await db.schema.alterTable('chain_deposits').addColumn('resolved_at', 'text').execute();
  // The payer finds a refund's deposit by the refund's id when it is paid or fails.
  await db.schema.createIndex('chain_deposits_refund').on('chain_deposits').column('refund_id').execute();
  // Small deposits of an account add up: the settle step sums them.
  await db.schema.createIndex('chain_deposits_account_state').on('chain_deposits').columns(['account_id', 'state']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropIndex('chain_deposits_account_state').execute();
  await db.schema.dropIndex('chain_deposits_refund').execute();
  for (const column of ['resolved_at', 'resolution_reason', 'resolved_by', 'refund_id', 'from_address']) {
    await db.schema.alterTable('chain_deposits').dropColumn(column).execute();
  }
}
