import { sql } from 'kysely';
import { iso } from '../clock.js';
import { compiledOnce } from './compiled.js';
import type { Executor } from './db.js';

// Queries on agent_channel_state: the gateway's per-machine dedupe marks. (The outbox's live in store/outbox.ts.)

export interface ChannelState {
  /** Highest reliable message id applied. */
  lastAppliedMsgId: number;
  /** Highest command_seq the agent acknowledged. */
  commandsAckedUpto: number;
  /** Highest command_seq queued. */
  lastCommandSeq: number;
}

/**
 * The machine's counters (zeros before its first reliable message or command). Read-only, so a reconnect storm
 * costs one indexed read per hello and no write.
 */
export async function openChannelState(db: Executor, machineId: string): Promise<ChannelState> {
  const row = await db
    .selectFrom('agent_channel_state')
    .select(['last_applied_msg_id', 'commands_acked_upto', 'last_command_seq'])
    .where('machine_id', '=', machineId)
    .executeTakeFirst();
  return {
    lastAppliedMsgId: Number(row?.last_applied_msg_id ?? 0n),
    commandsAckedUpto: Number(row?.commands_acked_upto ?? 0n),
    lastCommandSeq: Number(row?.last_command_seq ?? 0n),
  };
}

/**
 * Marks a reliable message id applied, inside the transaction that applies it (creating the machine's row at its
 * first message). False means it (or a later one) was applied already, on this replica or another: the caller
 * skips the effect. On Postgres the upsert locks the row, so a duplicate racing on another replica waits for this
 * commit and then sees the new mark.
 */
export async function markMessageApplied(trx: Executor, machineId: string, messageId: number, now: Date): Promise<boolean> {
  const result = await markApplied(trx, machineId, BigInt(messageId), iso(now));
  return (result.numAffectedRows ?? 0n) > 0n;
}

// Once per reliable message (every telemetry batch and receipt): compiled once.
const markApplied = compiledOnce((db, machineId: string, messageId: bigint, at: string) =>
  db
    .insertInto('agent_channel_state')
    .values({ machine_id: machineId, last_applied_msg_id: messageId, commands_acked_upto: 0n, last_command_seq: 0n, updated_at: at })
    .onConflict((oc) =>
      oc
        .column('machine_id')
        .doUpdateSet({ last_applied_msg_id: messageId, updated_at: at })
        .where('agent_channel_state.last_applied_msg_id', '<', messageId),
    ),
);

/**
 * Marks a group of reliable messages applied in two statements whatever its size (Postgres; the gateway's group
 * commit, gateway/applier.ts): the machines' rows are created if missing, locked in machine order and read in one
 * upsert, and the new marks written in one update. `messages` come sorted by machine, then id; the answer says, for each, whether
 * it is applied now (true) or was already (false), exactly as markMessageApplied would one after another. The lock is
 * taken on rows that exist (created first), so a replica racing on the same message waits for this commit and then
 * reads the new mark.
 */
export async function markMessagesApplied(
  trx: Executor,
  messages: ReadonlyArray<{ machineId: string; id: number }>,
  now: Date,
): Promise<boolean[]> {
  const at = iso(now);
  const machines = [...new Set(messages.map((m) => m.machineId))].sort();
  // One statement makes each machine's row exist and locks it (the no-op update takes the row lock FOR UPDATE
  // would), in machine order, answering its mark as it stands: one round trip less than insert, then select.
  const rows = await trx
    .insertInto('agent_channel_state')
    .values(
      machines.map((machine_id) => ({
        machine_id,
        last_applied_msg_id: 0n,
        commands_acked_upto: 0n,
        last_command_seq: 0n,
        updated_at: at,
      })),
    )
    .onConflict((oc) => oc.column('machine_id').doUpdateSet({ machine_id: sql.ref('agent_channel_state.machine_id') }))
    .returning(['machine_id', 'last_applied_msg_id'])
    .execute();
  const before = new Map(rows.map((row) => [row.machine_id, BigInt(row.last_applied_msg_id)]));
  const marks = new Map(before);
  const applied = messages.map((m) => {
    const id = BigInt(m.id);
    if (id <= (marks.get(m.machineId) ?? 0n)) return false;
    marks.set(m.machineId, id);
    return true;
  });
  const moved = [...marks].filter(([machineId, id]) => id > (before.get(machineId) ?? 0n));
  if (moved.length > 0) {
    await sql`update agent_channel_state as s set last_applied_msg_id = v.id, updated_at = ${at}
      from (values ${sql.join(moved.map(([machineId, id]) => sql`(${machineId}, cast(${id} as bigint))`))}) as v(machine_id, id)
      where s.machine_id = v.machine_id`.execute(trx);
  }
  return applied;
}
