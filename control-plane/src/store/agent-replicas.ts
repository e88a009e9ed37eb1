import { iso } from '../clock.js';
import type { Executor } from './db.js';

// agent_replicas: which replica holds each agent's channel, for the relay on the others (http/routes/relay.ts).

/** This replica now holds the machine's channel (a later handshake anywhere replaces it). */
export async function recordAgentReplica(db: Executor, machineId: string, replicaUrl: string, now: Date): Promise<void> {
  await db
    .insertInto('agent_replicas')
    .values({ machine_id: machineId, replica_url: replicaUrl, connected_at: iso(now) })
    .onConflict((oc) => oc.column('machine_id').doUpdateSet({ replica_url: replicaUrl, connected_at: iso(now) }))
    .execute();
}

/** The channel this replica held ended; a row another replica wrote since (the agent moved) stays. */
export async function forgetAgentReplica(db: Executor, machineId: string, replicaUrl: string): Promise<void> {
  await db.deleteFrom('agent_replicas').where('machine_id', '=', machineId).where('replica_url', '=', replicaUrl).execute();
}

/** The replica holding the machine's channel, or null when none says it does. */
export async function agentReplicaOf(db: Executor, machineId: string): Promise<string | null> {
  const row = await db.selectFrom('agent_replicas').select('replica_url').where('machine_id', '=', machineId).executeTakeFirst();
  return row?.replica_url ?? null;
}
