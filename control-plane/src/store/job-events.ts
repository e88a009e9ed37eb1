import { sql } from 'kysely';
import type { JobEventRecord } from '../domain/jobs/job.js';
import { sanitizeData, sanitizeText } from '../domain/jobs/sanitize.js';
import { type Executor, fromJson, toJson } from './db.js';

// Job events: sequenced per job from 1, sanitized and bounded. The job row's event_seq is the counter; the caller
// holds the job row (locked on Postgres) so sequence numbers never collide.

/** Events kept per job; older ones are pruned in batches. */
export const JOB_EVENTS_KEPT = 1000;
const PRUNE_EVERY = 100;

export interface NewJobEvent {
  kind: string;
  message: string;
  data?: Record<string, unknown>;
}

/**
 * Appends events to a job whose row the caller holds, sanitizing message and data with the job's secrets, and
 * moves the job's event counter. Returns the last seq written.
 */
export async function appendJobEvents(
  db: Executor,
  job: { id: string; eventSeq: bigint },
  events: readonly NewJobEvent[],
  at: Date,
  secrets: readonly string[] = [],
): Promise<bigint> {
  if (events.length === 0) return job.eventSeq;
  let seq = job.eventSeq;
  const rows = events.map((e) => {
    seq += 1n;
    return {
      job_id: job.id,
      seq,
      at: at.toISOString(),
      kind: e.kind.slice(0, 64),
      message: sanitizeText(e.message, secrets),
      data: toJson(sanitizeData(e.data ?? {}, secrets)),
    };
  });
  await db.insertInto('job_events').values(rows).execute();
  await db.updateTable('jobs').set({ event_seq: seq }).where('id', '=', job.id).execute();
  job.eventSeq = seq;
  // Bounded per job: every PRUNE_EVERY events, drop what fell out of the window.
  const crossed = seq / BigInt(PRUNE_EVERY) !== (seq - BigInt(rows.length)) / BigInt(PRUNE_EVERY);
  if (crossed && seq > BigInt(JOB_EVENTS_KEPT)) {
    await db
      .deleteFrom('job_events')
      .where('job_id', '=', job.id)
      .where('seq', '<=', seq - BigInt(JOB_EVENTS_KEPT))
      .execute();
  }
  return seq;
}

/** Events after `afterSeq`, oldest first, at most `fetch`. */
export async function listJobEvents(db: Executor, jobId: string, afterSeq: bigint, fetch: number): Promise<JobEventRecord[]> {
  const rows = await db
    .selectFrom('job_events')
    .selectAll()
    .where('job_id', '=', jobId)
    .where('seq', '>', afterSeq)
    .orderBy('seq')
    .limit(fetch)
    .execute();
  return rows.map((r) => ({
    seq: Number(r.seq),
    at: r.at,
    kind: r.kind,
    message: r.message,
    data: fromJson<Record<string, unknown>>(r.data) ?? {},
  }));
}

/** How many events a job keeps now (tests and operators). */
export async function countJobEvents(db: Executor, jobId: string): Promise<number> {
  const row = await db.selectFrom('job_events').select(sql<bigint>`count(*)`.as('n')).where('job_id', '=', jobId).executeTakeFirst();
  return Number(row?.n ?? 0n);
}
