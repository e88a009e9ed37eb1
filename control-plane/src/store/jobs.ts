import type { JobState, TemplateKind } from '@ark/shared';
import { type Selectable, sql, type Updateable } from 'kysely';
import type { JobAccessReport, JobRecord } from '../domain/jobs/job.js';
import { OCCUPYING_STATES, type CloseReason } from '../domain/jobs/states.js';
import { compiledOnce, rowsStatement, runSql } from './compiled.js';
import { dialectOf, type Executor, fromJson, isPostgres, toJson, type Tx } from './db.js';
import type { JobsTable } from './tables/jobs.js';

// Jobs: one row per reservation. Every change runs with the row held (FOR UPDATE on Postgres; SQLite
// serialises writers), so state, counters and the ledger move together.

export type JobRow = Selectable<JobsTable>;

const date = (value: string | null): Date | null => (value === null ? null : new Date(value));

interface StoredAccess {
  ssh_port: number;
  ssh_host_key_fingerprint: string;
  public_host?: string | null;
  ports: Array<{ container_port: number; host_port: number; protocol: string }>;
}

export function accessToJson(access: JobAccessReport | null): string | null {
  if (access === null) return null;
  const stored: StoredAccess = {
    ssh_port: access.sshPort,
    ssh_host_key_fingerprint: access.sshHostKeyFingerprint,
    public_host: access.publicHost,
    ports: access.ports.map((p) => ({ container_port: p.containerPort, host_port: p.hostPort, protocol: p.protocol })),
  };
  return toJson(stored);
}

function accessFromJson(value: string | null): JobAccessReport | null {
  const stored = fromJson<StoredAccess>(value);
  if (stored === null) return null;
  return {
    sshPort: stored.ssh_port,
    sshHostKeyFingerprint: stored.ssh_host_key_fingerprint,
    publicHost: stored.public_host ?? null,
    ports: stored.ports.map((p) => ({ containerPort: p.container_port, hostPort: p.host_port, protocol: p.protocol })),
  };
}

export function toJobRecord(row: JobRow): JobRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    machineId: row.machine_id,
    hostAccountId: row.host_account_id,
    quoteId: row.quote_id,
    state: row.state,
    fence: row.fence,
    jobVersion: row.job_version,
    budgetVersion: row.budget_version,
    rate: { machineRateMicroPerHour: row.machine_rate_micro_per_hour, platformFeeBps: row.platform_fee_bps },
    fundedBudgetMicro: row.funded_budget_micro,
    durationLimitS: row.duration_limit_s,
    hostCeilingAt: new Date(row.host_ceiling_at),
    gpuCount: Number(row.gpu_count),
    gpuModel: row.gpu_model,
    gpuPciAddresses: fromJson<string[]>(row.gpu_pci_addresses) ?? [],
    imageDigest: row.image_digest,
    template:
      row.template_id === null
        ? null
        : { id: row.template_id, name: row.template_name ?? '', kind: (row.template_kind ?? 'custom') as TemplateKind },
    acceptedRuntimeMs: row.accepted_runtime_ms,
    cumulativeChargeMicro: row.cumulative_charge_micro,
    chargedHostMicro: row.charged_host_micro,
    chargedFeeMicro: row.charged_fee_micro,
    meterStartedAt: date(row.meter_started_at),
    meterFloorAt: date(row.meter_floor_at),
    lastMeterReceiptAt: date(row.last_meter_receipt_at),
    meterSeq: row.meter_seq,
    meteredUntil: date(row.metered_until),
    access: accessFromJson(row.access),
    pullProgressPct: row.pull_progress_pct === null ? null : Number(row.pull_progress_pct),
    stopRequestedAt: date(row.stop_requested_at),
    stopReason: row.stop_reason,
    closeReason: row.close_reason as CloseReason | null,
    stoppedAt: date(row.stopped_at),
    retrievalUntil: date(row.retrieval_until),
    closedAt: date(row.closed_at),
    stateChangedAt: new Date(row.state_changed_at),
    eventSeq: row.event_seq,
    createdAt: new Date(row.created_at),
    updatedAt: new Date(row.updated_at),
  };
}

export interface NewJob {
  id: string;
  accountId: string;
  machineId: string;
  hostAccountId: string;
  quoteId: string;
  machineRateMicroPerHour: bigint;
  platformFeeBps: bigint;
  fundedBudgetMicro: bigint;
  durationLimitS: bigint;
  hostCeilingAt: Date;
  gpuCount: number;
  gpuModel: string | null;
  gpuPciAddresses: string[];
  imageDigest: string;
  template: { id: string; name: string; kind: TemplateKind } | null;
  launchSealed: string;
  envSealed: string;
  engineKeySealed: string | null;
  now: Date;
}

/** A new job: RESERVED, fence 1, versions 1, nothing metered. */
export async function insertJob(db: Executor, job: NewJob): Promise<void> {
  const at = job.now.toISOString();
  await db
    .insertInto('jobs')
    .values({
      id: job.id,
      account_id: job.accountId,
      machine_id: job.machineId,
      host_account_id: job.hostAccountId,
      quote_id: job.quoteId,
      state: 'RESERVED',
      fence: 1n,
      job_version: 1n,
      budget_version: 1n,
      machine_rate_micro_per_hour: job.machineRateMicroPerHour,
      platform_fee_bps: job.platformFeeBps,
      funded_budget_micro: job.fundedBudgetMicro,
      duration_limit_s: job.durationLimitS,
      host_ceiling_at: job.hostCeilingAt.toISOString(),
      funded_through: null,
      gpu_count: BigInt(job.gpuCount),
      gpu_model: job.gpuModel,
      gpu_pci_addresses: toJson(job.gpuPciAddresses),
      image_digest: job.imageDigest,
      template_id: job.template?.id ?? null,
      template_name: job.template?.name ?? null,
      template_kind: job.template?.kind ?? null,
      launch_sealed: job.launchSealed,
      env_sealed: job.envSealed,
      engine_key_sealed: job.engineKeySealed,
      accepted_runtime_ms: 0n,
      cumulative_charge_micro: 0n,
      charged_host_micro: 0n,
      charged_fee_micro: 0n,
      meter_started_at: null,
      meter_floor_at: null,
      last_meter_receipt_at: null,
      meter_seq: 0n,
      metered_until: null,
      access: null,
      pull_progress_pct: null,
      stop_requested_at: null,
      stop_reason: null,
      close_reason: null,
      stopped_at: null,
      retrieval_until: null,
      closed_at: null,
      state_changed_at: at,
      event_seq: 0n,
      created_at: at,
      updated_at: at,
    })
    .execute();
}

/** The job row, held for the caller's transaction (FOR UPDATE on Postgres; SQLite serialises writers). */
export async function lockJob(trx: Tx, id: string): Promise<JobRow | undefined> {
  return (await lockJobById(trx, id)).rows[0];
}

// Every receipt and every busy machine's telemetry holds its job: compiled once (store/compiled.ts).
const lockJobById = compiledOnce((db, id: string) => {
  const query = db.selectFrom('jobs').selectAll().where('id', '=', id);
  return isPostgres(db) ? query.forUpdate() : query;
});

/** Several job rows held at once, in id order (Postgres: the lock order of every group of jobs). */
export async function lockJobs(trx: Tx, ids: readonly string[]): Promise<JobRow[]> {
  if (ids.length === 0) return [];
  let query = trx
    .selectFrom('jobs')
    .selectAll()
    .where('id', 'in', [...ids])
    .orderBy('id');
  if (isPostgres(trx)) query = query.forUpdate();
  return query.execute();
}

/** The meter columns an accepted receipt moves. */
export interface JobMeterPatch {
  id: string;
  acceptedRuntimeMs: bigint;
  cumulativeChargeMicro: bigint;
  chargedHostMicro: bigint;
  chargedFeeMicro: bigint;
  meterSeq: bigint;
  meteredUntil: Date;
}

/** Writes the meter columns of one held job (an accepted receipt): compiled once, it runs for every receipt. */
export async function updateJobMeter(db: Executor, patch: JobMeterPatch, now: Date): Promise<void> {
  await updateMeter(
    db,
    patch.id,
    patch.acceptedRuntimeMs,
    patch.cumulativeChargeMicro,
    patch.chargedHostMicro,
    patch.chargedFeeMicro,
    patch.meterSeq,
    patch.meteredUntil.toISOString(),
    now.toISOString(),
  );
}

const updateMeter = compiledOnce(
  (db, id: string, runtime: bigint, cumulative: bigint, host: bigint, fee: bigint, meterSeq: bigint, meteredUntil: string, at: string) =>
    db
      .updateTable('jobs')
      .set({
        accepted_runtime_ms: runtime,
        cumulative_charge_micro: cumulative,
        charged_host_micro: host,
        charged_fee_micro: fee,
        meter_seq: meterSeq,
        metered_until: meteredUntil,
        last_meter_receipt_at: at,
        updated_at: at,
      })
      .where('id', '=', id),
);

/** Writes the meter columns of several held jobs in one statement (Postgres: the gateway's group of receipts). */
export async function updateJobMeters(trx: Tx, patches: readonly JobMeterPatch[], now: Date): Promise<void> {
  if (patches.length === 0) return;
  const at = now.toISOString();
  const rows = patches.map(
    (p) =>
      sql`(${p.id}, cast(${p.acceptedRuntimeMs} as bigint), cast(${p.cumulativeChargeMicro} as bigint), cast(${p.chargedHostMicro} as bigint), cast(${p.chargedFeeMicro} as bigint), cast(${p.meterSeq} as bigint), ${p.meteredUntil.toISOString()})`,
  );
  await sql`update jobs set accepted_runtime_ms = v.runtime, cumulative_charge_micro = v.cumulative, charged_host_micro = v.host,
      charged_fee_micro = v.fee, meter_seq = v.seq, metered_until = v.until, last_meter_receipt_at = ${at}, updated_at = ${at}
    from (values ${sql.join(rows)}) as v(id, runtime, cumulative, host, fee, seq, until)
    where jobs.id = v.id`.execute(trx);
}

/** The machine a job runs on (read before its row is held, to take the machine's channel row first). */
export async function machineIdOfJob(db: Executor, id: string): Promise<string | null> {
  const row = await db.selectFrom('jobs').select('machine_id').where('id', '=', id).executeTakeFirst();
  return row?.machine_id ?? null;
}

/** The renter a job belongs to, or null for an unknown id. */
export async function accountIdOfJob(db: Executor, id: string): Promise<string | null> {
  const row = await db.selectFrom('jobs').select('account_id').where('id', '=', id).executeTakeFirst();
  return row?.account_id ?? null;
}

export async function findJobRow(db: Executor, id: string): Promise<JobRow | undefined> {
  return (await jobById(db, id)).rows[0];
}

const jobById = compiledOnce((db, id: string) => db.selectFrom('jobs').selectAll().where('id', '=', id));

export async function findJob(db: Executor, id: string): Promise<JobRecord | null> {
  const row = await findJobRow(db, id);
  return row ? toJobRecord(row) : null;
}

/** Writes columns of a held job row. */
export async function updateJob(db: Executor, id: string, patch: Updateable<JobsTable>): Promise<void> {
  await db.updateTable('jobs').set(patch).where('id', '=', id).execute();
}

/** The account's jobs, newest first, after the (created_at, id) position. */
export async function listJobsOfAccount(
  db: Executor,
  accountId: string,
  filter: { state?: JobState },
  after: [string, string] | null,
  fetch: number,
): Promise<JobRecord[]> {
  let query = db.selectFrom('jobs').selectAll().where('account_id', '=', accountId);
  if (filter.state !== undefined) query = query.where('state', '=', filter.state);
  if (after) {
    const [createdAt, id] = after;
    query = query.where((eb) => eb.or([eb('created_at', '<', createdAt), eb.and([eb('created_at', '=', createdAt), eb('id', '<', id)])]));
  }
  const rows = await query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(fetch).execute();
  return rows.map(toJobRecord);
}

export interface Occupancy {
  /** How many jobs hold the machine's devices now. */
  jobs: number;
  /** The PCI addresses of the GPUs they hold. */
  pciAddresses: Set<string>;
}

/** The jobs holding a machine's devices now: their PCI addresses and how many there are. */
export async function occupancyOf(db: Executor, machineId: string): Promise<Occupancy> {
  return (await occupancyOfMachines(db, [machineId])).get(machineId) ?? { jobs: 0, pciAddresses: new Set() };
}

/** occupancyOf for several machines in one read (a page of offers); a machine no job occupies is absent. */
export async function occupancyOfMachines(db: Executor, machineIds: readonly string[]): Promise<Map<string, Occupancy>> {
  const result = new Map<string, Occupancy>();
  if (machineIds.length === 0) return result;
  const rows = await db
    .selectFrom('jobs')
    .select(['machine_id', 'gpu_pci_addresses'])
    .where('machine_id', 'in', [...machineIds])
    .where('state', 'in', [...OCCUPYING_STATES])
    .execute();
  for (const row of rows) {
    const occupancy = result.get(row.machine_id) ?? { jobs: 0, pciAddresses: new Set<string>() };
    occupancy.jobs += 1;
    for (const pci of fromJson<string[]>(row.gpu_pci_addresses) ?? []) occupancy.pciAddresses.add(pci);
    result.set(row.machine_id, occupancy);
  }
  return result;
}

/** Ids of jobs in `states`, oldest state change first, for the sweeps. */
export async function jobIdsInStates(
  db: Executor,
  states: readonly JobState[],
  options: { stateChangedBefore?: Date; fundedThroughAtOrBefore?: Date; retrievalEndedAt?: Date; limit: number },
): Promise<string[]> {
  let query = db
    .selectFrom('jobs')
    .select('id')
    .where('state', 'in', [...states]);
  if (options.stateChangedBefore) query = query.where('state_changed_at', '<', options.stateChangedBefore.toISOString());
  if (options.fundedThroughAtOrBefore) query = query.where('funded_through', '<=', options.fundedThroughAtOrBefore.toISOString());
  if (options.retrievalEndedAt) query = query.where('retrieval_until', '<=', options.retrievalEndedAt.toISOString());
  const rows = await query.orderBy('state_changed_at').limit(options.limit).execute();
  return rows.map((r) => r.id);
}

/** Ids of jobs in `states` reserved before `createdBefore`, oldest first (the start-timeout sweep). */
export async function jobIdsCreatedBefore(
  db: Executor,
  states: readonly JobState[],
  createdBefore: Date,
  limit: number,
): Promise<string[]> {
  const rows = await db
    .selectFrom('jobs')
    .select('id')
    .where('state', 'in', [...states])
    .where('created_at', '<', createdBefore.toISOString())
    .orderBy('created_at')
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}

/**
 * Jobs in `states` on machines silent since before `silentBefore` (no heartbeat at all counts as silent), whose
 * state changed before `stateChangedBefore`.
 */
export async function jobIdsOnSilentMachines(
  db: Executor,
  states: readonly JobState[],
  silentBefore: Date,
  stateChangedBefore: Date,
  limit: number,
): Promise<string[]> {
  const rows = await db
    .selectFrom('jobs')
    .innerJoin('machines', 'machines.id', 'jobs.machine_id')
    .select('jobs.id')
    .where('jobs.state', 'in', [...states])
    .where('jobs.state_changed_at', '<', stateChangedBefore.toISOString())
    .where((eb) => eb.or([eb('machines.last_heartbeat_at', 'is', null), eb('machines.last_heartbeat_at', '<', silentBefore.toISOString())]))
    .orderBy('jobs.state_changed_at')
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}

/** A machine's RUNNING jobs that hold GPUs (the telemetry check: jobs without GPUs are never locked for it). */
export async function runningGpuJobIdsOfMachine(db: Executor, machineId: string): Promise<string[]> {
  const { rows } = await runningJobsOfMachine(db, machineId);
  return rows.filter((r) => (fromJson<string[]>(r.gpu_pci_addresses) ?? []).length > 0).map((r) => r.id);
}

// Once per telemetry batch on SQLite (which checks batch by batch): compiled once.
const runningJobsOfMachine = compiledOnce((db, machineId: string) =>
  db.selectFrom('jobs').select(['id', 'gpu_pci_addresses']).where('machine_id', '=', machineId).where('state', '=', 'RUNNING'),
);

/**
 * Which of `machineIds` have a RUNNING job (the grouped telemetry hook's filter): every telemetry group asks, so the
 * statement's text is kept per group size (store/compiled.ts) rather than built and compiled by Kysely each time.
 */
export async function machinesWithRunningJobs(db: Executor, machineIds: readonly string[]): Promise<Set<string>> {
  if (machineIds.length === 0) return new Set();
  const rows: Array<{ machine_id: string }> = [];
  for (let from = 0; from < machineIds.length; from += RUNNING_MACHINES_CHUNK) {
    const chunk = machineIds.slice(from, from + RUNNING_MACHINES_CHUNK);
    rows.push(...(await runSql<{ machine_id: string }>(db, runningMachinesSql(dialectOf(db), chunk.length), chunk)).rows);
  }
  return new Set(rows.map((r) => r.machine_id));
}

/** Machine ids a statement at most (a group is at most 256 messages: one statement in practice). */
const RUNNING_MACHINES_CHUNK = 500;
const runningMachinesSql = rowsStatement(
  1,
  (_dialect, values) => `select distinct machine_id from jobs where machine_id in (${values}) and state = 'RUNNING'`,
);

/** Ids of a machine's jobs in `states` (the heartbeat's reconciliation check). */
export async function jobIdsOfMachine(db: Executor, machineId: string, states: readonly JobState[]): Promise<string[]> {
  if (states.length === 1) return (await jobIdsOfMachineIn(db, machineId, states[0] as JobState)).rows.map((r) => r.id);
  const rows = await db
    .selectFrom('jobs')
    .select('id')
    .where('machine_id', '=', machineId)
    .where('state', 'in', [...states])
    .execute();
  return rows.map((r) => r.id);
}

// The heartbeat's check (one state), for every heartbeat that lists running jobs: compiled once.
const jobIdsOfMachineIn = compiledOnce((db, machineId: string, state: JobState) =>
  db.selectFrom('jobs').select('id').where('machine_id', '=', machineId).where('state', '=', state),
);

/** A machine's jobs in `states`, oldest first (the host's machine page: its current rentals). */
export async function jobsOfMachine(db: Executor, machineId: string, states: readonly JobState[]): Promise<JobRecord[]> {
  const rows = await db
    .selectFrom('jobs')
    .selectAll()
    .where('machine_id', '=', machineId)
    .where('state', 'in', [...states])
    .orderBy('created_at')
    .orderBy('id')
    .limit(64)
    .execute();
  return rows.map(toJobRecord);
}

export interface NewAmendment {
  id: string;
  jobId: string;
  accountId: string;
  budgetVersion: bigint;
  additionalBudgetMicro: bigint;
  fundedBudgetMicro: bigint;
  previousDurationLimitS: bigint;
  newDurationLimitS: bigint;
  now: Date;
}

export async function insertAmendment(db: Executor, a: NewAmendment): Promise<void> {
  await db
    .insertInto('job_budget_amendments')
    .values({
      id: a.id,
      job_id: a.jobId,
      account_id: a.accountId,
      budget_version: a.budgetVersion,
      additional_budget_micro: a.additionalBudgetMicro,
      funded_budget_micro: a.fundedBudgetMicro,
      previous_duration_limit_s: a.previousDurationLimitS,
      new_duration_limit_s: a.newDurationLimitS,
      created_at: a.now.toISOString(),
    })
    .execute();
}

export async function amendmentsOf(db: Executor, jobId: string) {
  return db.selectFrom('job_budget_amendments').selectAll().where('job_id', '=', jobId).orderBy('budget_version').execute();
}
