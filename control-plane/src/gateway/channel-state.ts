import type { Executor } from '../store/db.js';

// Queries on agent_channel_state: the gateway's per-machine dedupe marks. (The outbox's live in outbox.ts.)

export interface ChannelState {
  /** Highest reliable message id applied. */
  lastAppliedMsgId: number;
  /** Highest command_seq the agent acknowledged. */
  commandsAckedUpto: number;
  /** Highest command_seq queued. */
  lastCommandSeq: number;
}

/** The machine's counters, creating its row at first contact. */
export async function openChannelState(db: Executor, machineId: string, now: Date): Promise<ChannelState> {
  let row = await db
    .selectFrom('agent_channel_state')
    .select(['last_applied_msg_id', 'commands_acked_upto', 'last_command_seq'])
    .where('machine_id', '=', machineId)
    .executeTakeFirst();
  if (!row) {
    await db
      .insertInto('agent_channel_state')
      .values({
        machine_id: machineId,
        last_applied_msg_id: 0n,
        commands_acked_upto: 0n,
        last_command_seq: 0n,
        updated_at: now.toISOString(),
      })
      .onConflict((oc) => oc.column('machine_id').doNothing())
      .execute();
    row = await db
      .selectFrom('agent_channel_state')
      .select(['last_applied_msg_id', 'commands_acked_upto', 'last_command_seq'])
      .where('machine_id', '=', machineId)
      .executeTakeFirstOrThrow();
  }
  return {
    lastAppliedMsgId: Number(row.last_applied_msg_id),
    commandsAckedUpto: Number(row.commands_acked_upto),
    lastCommandSeq: Number(row.last_command_seq),
  };
}

/**
 * Marks a reliable message id applied, inside the transaction that applies it. False means it (or a later one)
 * was applied already, on this replica or another: the caller skips the effect. On Postgres the update locks
 * the row, so a duplicate racing on another replica waits for this commit and then sees the new mark.
 */
export async function markMessageApplied(trx: Executor, machineId: string, messageId: number, now: Date): Promise<boolean> {
  const result = await trx
    .updateTable('agent_channel_state')
    .set({ last_applied_msg_id: BigInt(messageId), updated_at: now.toISOString() })
    .where('machine_id', '=', machineId)
    .where('last_applied_msg_id', '<', BigInt(messageId))
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}
