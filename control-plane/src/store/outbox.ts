import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import {
  CleanJobBody,
  type CommandKind,
  type CommandMessage,
  compileChannelSchema,
  LaunchJobBody,
  RotateKeyBody,
  RunNettestBody,
  RunSelftestBody,
  StopJobBody,
  UpdateGoLiveBody,
} from '@ark/shared';
import { sql } from 'kysely';
import { iso } from '../clock.js';
import { type Executor, isPostgres, type Tx } from './db.js';

// The agent outbox: commands queued per machine (agent_outbox) and the per-machine counter row that numbers them
// (agent_channel_state). Use cases queue commands through an OutboxWriter inside their own transaction; the gateway
// (gateway/delivery.ts, gateway/server.ts) delivers them and records the agent's acknowledgements.

/** Postgres NOTIFY channel: the payload is the machine id whose outbox grew. */
export const OUTBOX_NOTIFY_CHANNEL = 'ark_agent_outbox';

/**
 * In-process wake-ups, for the replica that enqueued (and the only one, on SQLite). A listener may query before
 * the enqueuing transaction commits: on SQLite its query waits for the one connection, on Postgres the NOTIFY
 * that arrives at commit wakes it again, and the polling fallback covers anything else. It lives here, beside the
 * writer, so that the store never imports the gateway that listens.
 */
export const outboxWakeups = new EventEmitter();
outboxWakeups.setMaxListeners(0);

export type CommandBodyOf<K extends CommandKind> = Extract<CommandMessage, { kind: K }>['body'];

const bodyChecks = {
  launch_job: compileChannelSchema(LaunchJobBody),
  stop_job: compileChannelSchema(StopJobBody),
  clean_job: compileChannelSchema(CleanJobBody),
  run_nettest: compileChannelSchema(RunNettestBody),
  update_go_live: compileChannelSchema(UpdateGoLiveBody),
  rotate_key: compileChannelSchema(RotateKeyBody),
  run_selftest: compileChannelSchema(RunSelftestBody),
} as const;

export interface EnqueueCommandInput<K extends CommandKind = CommandKind> {
  machineId: string;
  kind: K;
  body: CommandBodyOf<K>;
  now: Date;
}

export interface QueuedCommand {
  commandId: string;
  commandSeq: number;
}

/** How use cases queue agent commands: inside the caller's transaction, delivered only if it commits. */
export interface OutboxWriter {
  enqueue<K extends CommandKind>(db: Executor, input: EnqueueCommandInput<K>): Promise<QueuedCommand>;
}

/** The outbox writer (on Postgres it also notifies the other replicas at commit). */
export function outboxWriter(): OutboxWriter {
  return { enqueue: enqueueCommand };
}

/**
 * Queues a command for a machine, inside the caller's transaction: it is delivered only if that transaction
 * commits, in command_seq order, by whichever replica holds the machine's socket (now or after it reconnects).
 * The per-machine counter row is locked until commit, so sequence numbers are gapless and commit in order.
 */
async function enqueueCommand<K extends CommandKind>(db: Executor, input: EnqueueCommandInput<K>): Promise<QueuedCommand> {
  const check = bodyChecks[input.kind];
  if (!check) throw new Error(`unknown command kind ${String(input.kind)}`);
  if (!check.Check(input.body)) {
    const first = check.Errors(input.body).First();
    // A programming error: agents would refuse the frame, so it must never reach the outbox.
    throw new Error(`invalid ${input.kind} command body: ${first ? `${first.path} ${first.message}` : 'schema'}`);
  }
  const at = iso(input.now);
  const counter = await db
    .insertInto('agent_channel_state')
    .values({ machine_id: input.machineId, last_applied_msg_id: 0n, commands_acked_upto: 0n, last_command_seq: 1n, updated_at: at })
    .onConflict((oc) =>
      oc.column('machine_id').doUpdateSet({ last_command_seq: sql`agent_channel_state.last_command_seq + 1`, updated_at: at }),
    )
    .returning('last_command_seq')
    .executeTakeFirstOrThrow();
  const commandSeq = counter.last_command_seq;
  const commandId = randomUUID();
  await db
    .insertInto('agent_outbox')
    .values({
      machine_id: input.machineId,
      command_seq: commandSeq,
      command_id: commandId,
      kind: input.kind,
      body: JSON.stringify(input.body),
      created_at: at,
      acked_at: null,
    })
    .execute();
  if (isPostgres(db)) {
    // Delivered to every listening replica when (and only if) the transaction commits.
    await sql`select pg_notify(${OUTBOX_NOTIFY_CHANNEL}, ${input.machineId})`.execute(db);
  }
  const machineId = input.machineId;
  setImmediate(() => outboxWakeups.emit('enqueued', machineId));
  return { commandId, commandSeq: Number(commandSeq) };
}

/**
 * Locks the machine's agent channel row (Postgres; SQLite serialises writers). One lock order everywhere: channel
 * row, then job row, then ledger accounts in key order. The gateway's transaction starts with the channel row (it
 * marks the message applied), and queuing a command takes it too.
 */
export async function lockMachineChannel(trx: Tx, machineId: string): Promise<void> {
  if (!isPostgres(trx)) return;
  await trx.selectFrom('agent_channel_state').select('machine_id').where('machine_id', '=', machineId).forUpdate().execute();
}

export interface OutboxCommand {
  commandSeq: number;
  commandId: string;
  kind: CommandKind;
  body: unknown;
}

/** Commands after `afterSeq`, oldest first, at most `limit`. Acknowledged ones are never resent. */
export async function commandsAfter(db: Executor, machineId: string, afterSeq: number, limit: number): Promise<OutboxCommand[]> {
  const rows = await db
    .selectFrom('agent_outbox')
    .select(['command_seq', 'command_id', 'kind', 'body'])
    .where('machine_id', '=', machineId)
    .where('command_seq', '>', BigInt(afterSeq))
    .orderBy('command_seq')
    .limit(limit)
    .execute();
  return rows.map((row) => ({
    commandSeq: Number(row.command_seq),
    commandId: row.command_id,
    kind: row.kind as CommandKind,
    body: JSON.parse(row.body) as unknown,
  }));
}

/**
 * Records the agent's cumulative acknowledgement; never moves backwards, and never past the last queued command,
 * so a confused agent cannot make the control plane skip commands queued later. Returns the recorded value.
 */
export async function acknowledgeCommands(db: Executor, machineId: string, claimedUpto: number, now: Date): Promise<number> {
  const at = iso(now);
  const state = await db
    .selectFrom('agent_channel_state')
    .select(['last_command_seq', 'commands_acked_upto'])
    .where('machine_id', '=', machineId)
    .executeTakeFirst();
  if (!state) return 0;
  const upto = Math.min(claimedUpto, Number(state.last_command_seq));
  if (upto <= Number(state.commands_acked_upto)) return Number(state.commands_acked_upto);
  await db
    .updateTable('agent_outbox')
    .set({ acked_at: at })
    .where('machine_id', '=', machineId)
    .where('command_seq', '<=', BigInt(upto))
    .where('acked_at', 'is', null)
    .execute();
  await db
    .updateTable('agent_channel_state')
    .set({ commands_acked_upto: BigInt(upto), updated_at: at })
    .where('machine_id', '=', machineId)
    .where('commands_acked_upto', '<', BigInt(upto))
    .execute();
  return upto;
}

/** Machines with unacknowledged commands and their highest pending command_seq: the polling fallback's scan. */
export async function machinesWithPendingCommands(db: Executor): Promise<Array<{ machineId: string; maxSeq: number }>> {
  const rows = await db
    .selectFrom('agent_outbox')
    .select(['machine_id', (eb) => eb.fn.max('command_seq').as('max_seq')])
    .where('acked_at', 'is', null)
    .groupBy('machine_id')
    .execute();
  return rows.map((row) => ({ machineId: row.machine_id, maxSeq: Number(row.max_seq) }));
}
