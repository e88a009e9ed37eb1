import type { JobState, MachineLiveState } from '@ark/shared';
import { sql } from 'kysely';
import type { Executor } from './db.js';

// The fleet as operators read it (GET /api/v1/admin/fleet): machines and their GPUs per go-live state, the GPUs
// renters can find listed, and jobs and their GPUs per state. Read-only, three grouped scans; both dialects
// (timestamps are ISO text, so "heartbeat since" is a string comparison; Postgres answers count and sum as strings).

type Raw = bigint | string | number | null;
const num = (value: Raw): number => Number(value ?? 0);

export interface MachineStateCounts {
  state: MachineLiveState;
  machines: number;
  gpus: number;
  /** Machines of this state whose last stored heartbeat is at or after `onlineSince`. */
  online: number;
}

/** Machines per go-live state: how many, their GPUs, and how many were heard from since `onlineSince` (ISO). */
export async function machineStateCounts(db: Executor, onlineSince: string): Promise<MachineStateCounts[]> {
  const rows = await sql<{ state: MachineLiveState; machines: Raw; gpus: Raw; online: Raw }>`
    select live_state as state, count(*) as machines, sum(gpu_count) as gpus,
      sum(case when last_heartbeat_at >= ${onlineSince} then 1 else 0 end) as online
    from machines
    group by live_state`.execute(db);
  return rows.rows.map((r) => ({ state: r.state, machines: num(r.machines), gpus: num(r.gpus), online: num(r.online) }));
}

/**
 * GPUs of the machines renters' offer search lists now (store/offers.ts listOffers without a filter): the offer listed,
 * the machine live and not held under the reliability floor, its current version available beyond `now` (ISO).
 */
export async function listedGpus(db: Executor, now: string): Promise<number> {
  const rows = await sql<{ gpus: Raw }>`
    select sum(m.gpu_count) as gpus
    from offers o
    join offer_versions v on v.offer_id = o.id and v.version = o.current_version
    join machines m on m.id = o.machine_id
    left join machine_reliability r on r.machine_id = o.machine_id
    where o.listed = 1 and m.live_state = 'live' and (r.held is null or r.held = 0) and v.available_until > ${now}`.execute(db);
  return num(rows.rows[0]?.gpus ?? null);
}

export interface JobStateCounts {
  state: JobState;
  jobs: number;
  /** The jobs' GPU counts summed. */
  gpus: number;
}

/** Jobs per state, with their GPUs. States without a job are absent. */
export async function jobStateCounts(db: Executor): Promise<JobStateCounts[]> {
  const rows = await sql<{ state: JobState; jobs: Raw; gpus: Raw }>`
    select state, count(*) as jobs, sum(gpu_count) as gpus from jobs group by state`.execute(db);
  return rows.rows.map((r) => ({ state: r.state, jobs: num(r.jobs), gpus: num(r.gpus) }));
}
