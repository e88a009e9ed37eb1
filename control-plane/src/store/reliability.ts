import { sql } from 'kysely';
import { iso } from '../clock.js';
import { PENALIZED_CLOSE_REASONS, type Span } from '../domain/machines/reliability.js';
import type { Executor, Tx } from './db.js';
import type { MachineReliabilityTable } from './tables/reliability.js';

// Machine reliability: the online intervals heartbeats extend, and the scores the reliability worker stores.

export interface HeartbeatSeen {
  machineId: string;
  /** The heartbeat's time at the control plane's clock (ISO). */
  at: string;
  /** `at` minus the liveness grace (ISO): an interval that ended before this is over, the heartbeat starts a new one. */
  cutoff: string;
}

/**
 * Extends each machine's current online interval to its heartbeat, or starts a new one when the last one ended more
 * than the liveness grace ago: two statements for the whole batch, one row touched per machine. A heartbeat older
 * than the interval's end (another replica wrote a newer one) changes nothing.
 */
export async function extendOnlineIntervals(db: Executor, seen: readonly HeartbeatSeen[]): Promise<void> {
  if (seen.length === 0) return;
  // VALUES columns are column1.. on both dialects.
  const values = sql.join(seen.map((s) => sql`(${s.machineId}, ${s.at}, ${s.cutoff})`));
  await sql`
    UPDATE machine_online_intervals SET ended_at = v.column2
    FROM (VALUES ${values}) AS v
    WHERE machine_online_intervals.machine_id = v.column1
      AND machine_online_intervals.ended_at >= v.column3
      AND machine_online_intervals.ended_at < v.column2
  `.execute(db);
  await sql`
    INSERT INTO machine_online_intervals (machine_id, started_at, ended_at)
    SELECT v.column1, v.column2, v.column2 FROM (VALUES ${values}) AS v
    WHERE EXISTS (SELECT 1 FROM machines m WHERE m.id = v.column1)
      AND NOT EXISTS (
        SELECT 1 FROM machine_online_intervals i WHERE i.machine_id = v.column1 AND i.ended_at >= v.column3
      )
    ON CONFLICT DO NOTHING
  `.execute(db);
}

/** Intervals that ended before `before` (older than the window and its grace): nothing reads them any more. */
export async function pruneOnlineIntervals(db: Executor, before: Date): Promise<number> {
  const result = await db.deleteFrom('machine_online_intervals').where('ended_at', '<', iso(before)).executeTakeFirst();
  return Number(result.numDeletedRows);
}

export interface ReliabilityMachine {
  machineId: string;
  ownerAccountId: string;
  /** The first heartbeat the worker saw (kept once found: intervals are pruned), else the earliest interval's start. */
  historyFromMs: number | null;
  intervals: Span[];
  /** The machine's offer versions (commit time and windows), oldest first. */
  offerVersions: Array<{ committedAtMs: number; windows: Span[] }>;
  penalizedAtMs: number[];
  /** What the worker stored last time, if anything. */
  previous: { held: boolean; heldSince: string | null } | null;
}

const ms = (text: string) => Date.parse(text);

/**
 * One page of machines (by id, after `afterId`) with everything their score needs since `since`: intervals still
 * reaching into the window (`intervalsSince` leaves room for the grace), every offer version with its maintenance
 * windows, and the jobs that count against them.
 */
export async function loadReliabilityPage(
  db: Executor,
  input: { afterId: string | null; limit: number; since: Date; intervalsSince: Date },
): Promise<ReliabilityMachine[]> {
  let query = db
    .selectFrom('machines as m')
    .leftJoin('machine_reliability as r', 'r.machine_id', 'm.id')
    .select(['m.id', 'm.owner_account_id', 'r.held', 'r.held_since', 'r.history_from'])
    .orderBy('m.id')
    .limit(input.limit);
  if (input.afterId !== null) query = query.where('m.id', '>', input.afterId);
  const rows = await query.execute();
  if (rows.length === 0) return [];
  const ids = rows.map((r) => r.id);
  const machines = new Map<string, ReliabilityMachine>();
  for (const row of rows) {
    machines.set(row.id, {
      machineId: row.id,
      ownerAccountId: row.owner_account_id,
      historyFromMs: row.history_from === null ? null : ms(row.history_from),
      intervals: [],
      offerVersions: [],
      penalizedAtMs: [],
      previous: row.held === null ? null : { held: Number(row.held) === 1, heldSince: row.held_since },
    });
  }
  const intervals = await db
    .selectFrom('machine_online_intervals')
    .select(['machine_id', 'started_at', 'ended_at'])
    .where('machine_id', 'in', ids)
    .where('ended_at', '>=', iso(input.intervalsSince))
    .orderBy('machine_id')
    .orderBy('started_at')
    .execute();
  for (const i of intervals) {
    const machine = machines.get(i.machine_id);
    if (!machine) continue;
    machine.intervals.push({ fromMs: ms(i.started_at), toMs: ms(i.ended_at) });
    // Intervals come oldest first: the first one starts the history when nothing was stored yet.
    if (machine.historyFromMs === null) machine.historyFromMs = ms(i.started_at);
  }

  const versions = await db
    .selectFrom('offers as o')
    .innerJoin('offer_versions as v', 'v.offer_id', 'o.id')
    .leftJoin('offer_maintenance_windows as w', (join) => join.onRef('w.offer_id', '=', 'v.offer_id').onRef('w.version', '=', 'v.version'))
    .select(['o.machine_id', 'v.version', 'v.created_at', 'w.starts_at', 'w.ends_at'])
    .where('o.machine_id', 'in', ids)
    .orderBy('o.machine_id')
    .orderBy('v.version')
    .execute();
  // Rows come one per (version, window), versions in order: a new version number opens a new entry.
  const lastVersion = new Map<string, bigint>();
  for (const row of versions) {
    const machine = machines.get(row.machine_id);
    if (!machine) continue;
    let version = machine.offerVersions[machine.offerVersions.length - 1];
    if (!version || lastVersion.get(row.machine_id) !== row.version) {
      version = { committedAtMs: ms(row.created_at), windows: [] };
      machine.offerVersions.push(version);
      lastVersion.set(row.machine_id, row.version);
    }
    if (row.starts_at !== null && row.ends_at !== null) version.windows.push({ fromMs: ms(row.starts_at), toMs: ms(row.ends_at) });
  }

  const jobs = await db
    .selectFrom('jobs')
    .select(['machine_id', 'stop_requested_at', 'closed_at', 'state_changed_at'])
    .where('machine_id', 'in', ids)
    .where('close_reason', 'in', [...PENALIZED_CLOSE_REASONS])
    .where('updated_at', '>=', iso(input.since))
    .execute();
  for (const job of jobs) {
    // When it went wrong: the control plane's stop (start timeout) or the failure itself.
    const at = job.stop_requested_at ?? job.closed_at ?? job.state_changed_at;
    machines.get(job.machine_id)?.penalizedAtMs.push(ms(at));
  }
  return [...machines.values()];
}

/** Stores the machine's score (one row per machine, replaced). */
/** Rows a statement: 12 bound values each, far under either database's bound on parameters. */
const WRITE_BATCH = 250;

/**
 * Stores the scores of many machines, a few statements for a whole page (one round trip per statement, not per
 * machine: what the worker spends its time on at fleet size, on Postgres most of all).
 */
export async function writeReliabilities(trx: Tx, rows: readonly MachineReliabilityTable[]): Promise<void> {
  for (let i = 0; i < rows.length; i += WRITE_BATCH) {
    await trx
      .insertInto('machine_reliability')
      .values(rows.slice(i, i + WRITE_BATCH))
      .onConflict((oc) =>
        oc.column('machine_id').doUpdateSet((eb) => ({
          owner_account_id: eb.ref('excluded.owner_account_id'),
          score_e4: eb.ref('excluded.score_e4'),
          is_new: eb.ref('excluded.is_new'),
          held: eb.ref('excluded.held'),
          held_since: eb.ref('excluded.held_since'),
          online_s: eb.ref('excluded.online_s'),
          counted_s: eb.ref('excluded.counted_s'),
          penalized_jobs: eb.ref('excluded.penalized_jobs'),
          window_from: eb.ref('excluded.window_from'),
          history_from: eb.ref('excluded.history_from'),
          computed_at: eb.ref('excluded.computed_at'),
        })),
      )
      .execute();
  }
}

/** The machine's stored reliability, if the worker has scored it. */
export async function reliabilityOf(db: Executor, machineId: string): Promise<MachineReliabilityTable | undefined> {
  return db.selectFrom('machine_reliability').selectAll().where('machine_id', '=', machineId).executeTakeFirst();
}

/** Whether the machine is held off new rentals for its reliability. */
export async function isReliabilityHeld(db: Executor, machineId: string): Promise<boolean> {
  const row = await db.selectFrom('machine_reliability').select('held').where('machine_id', '=', machineId).executeTakeFirst();
  return row !== undefined && Number(row.held) === 1;
}
