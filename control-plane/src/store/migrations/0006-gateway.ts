import type { Kysely } from 'kysely';

// The agent gateway: shared settings (the control plane's channel key pair), the command outbox and the
// per-machine channel counters. No foreign key to machines: the gateway only needs the machine id.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('settings')
    .addColumn('key', 'text', (c) => c.primaryKey())
    .addColumn('value', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('agent_channel_state')
    .addColumn('machine_id', 'text', (c) => c.primaryKey())
    .addColumn('last_applied_msg_id', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('commands_acked_upto', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('last_command_seq', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('agent_outbox')
    .addColumn('machine_id', 'text', (c) => c.notNull())
    .addColumn('command_seq', 'bigint', (c) => c.notNull())
    .addColumn('command_id', 'text', (c) => c.notNull().unique())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('body', 'text', (c) => c.notNull())
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('acked_at', 'text')
    .addPrimaryKeyConstraint('agent_outbox_pk', ['machine_id', 'command_seq'])
    .execute();
  // The polling fallback scans pending commands only.
  await db.schema.createIndex('agent_outbox_pending').on('agent_outbox').columns(['acked_at', 'machine_id']).execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('agent_outbox').execute();
  await db.schema.dropTable('agent_channel_state').execute();
  await db.schema.dropTable('settings').execute();
}
