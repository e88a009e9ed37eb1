import type { Kysely } from 'kysely';

// Which replica holds each agent's channel (cross-replica relay): the replica that completes a handshake writes its
// own address here; the relay on another replica forwards a request for that machine to it.

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('agent_replicas')
    .addColumn('machine_id', 'text', (c) => c.primaryKey())
    /** ARK_REPLICA_URL of the replica holding the channel. */
    .addColumn('replica_url', 'text', (c) => c.notNull())
    .addColumn('connected_at', 'text', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('agent_replicas').execute();
}
