import type { MachineLiveState, MachineManifest, PairingMachine } from '@ark/shared';
import type { Selectable } from 'kysely';
import { iso } from '../clock.js';
import { initialLiveState } from '../domain/machines/go-live.js';
import { manifestFacts, manifestHash } from '../domain/machines/manifest.js';
import type { MeasuredNetwork } from '../domain/machines/network.js';
import { type Executor, fromBool, isPostgres, toJson, type Tx } from './db.js';
import type { MachinesTable } from './tables/hosts.js';

// Machines: enrolled rigs, their go-live state, last heartbeat and network facts. Queries and row mapping only: the
// heartbeat and nettest use cases (services/hosting/) decide what to write.

export type MachineRow = Selectable<MachinesTable>;

/** The key a machine signs its channel frames with (the gateway's directory reads it). */
export async function machinePublicKeyOf(db: Executor, machineId: string): Promise<string | null> {
  const row = await db.selectFrom('machines').select('public_key').where('id', '=', machineId).executeTakeFirst();
  return row?.public_key ?? null;
}

export interface NewMachine {
  id: string;
  ownerAccountId: string;
  publicKey: string;
  manifest: MachineManifest;
  goLive: boolean;
  enrollmentTokenId: string;
  pairingId: string | null;
  now: Date;
}

export async function insertMachine(db: Executor, machine: NewMachine): Promise<MachineRow> {
  const facts = manifestFacts(machine.manifest);
  const row: MachineRow = {
    id: machine.id,
    owner_account_id: machine.ownerAccountId,
    public_key: machine.publicKey,
    manifest: toJson(machine.manifest),
    manifest_hash: manifestHash(machine.manifest),
    hostname: facts.hostname,
    gpu_count: BigInt(facts.gpuCount),
    gpu_model: facts.gpuModel,
    vram_bytes: facts.vramBytes,
    ram_bytes: facts.ramBytes,
    disk_bytes: facts.diskBytes,
    region: facts.region,
    go_live: fromBool(machine.goLive),
    cpu_listed: 0n,
    live_state: initialLiveState(machine.goLive),
    live_error: null,
    last_heartbeat_at: null,
    healthy: null,
    problems: '[]',
    readiness_problem: null,
    uptime_s: null,
    net_download_mbps: null,
    net_upload_mbps: null,
    net_latency_ms: null,
    net_measured_at: null,
    net_error: null,
    enrollment_token_id: machine.enrollmentTokenId,
    pairing_id: machine.pairingId,
    created_at: iso(machine.now),
    updated_at: iso(machine.now),
  };
  await db.insertInto('machines').values(row).execute();
  return row;
}

export async function findMachine(db: Executor, id: string): Promise<MachineRow | undefined> {
  return db.selectFrom('machines').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * The machine row, held for a reservation's transaction (Postgres FOR NO KEY UPDATE: reservations on one machine
 * queue behind each other, and rows referencing the machine may still take their key-share locks).
 */
export async function lockMachineForReservation(trx: Tx, id: string): Promise<MachineRow | undefined> {
  let query = trx.selectFrom('machines').selectAll().where('id', '=', id);
  if (isPostgres(trx)) query = query.forNoKeyUpdate();
  return query.executeTakeFirst();
}

/** The stored last heartbeat of a machine (null: never seen), or undefined when there is no such machine. */
export async function storedHeartbeatAtOf(db: Executor, id: string): Promise<string | null | undefined> {
  const row = await db.selectFrom('machines').select('last_heartbeat_at').where('id', '=', id).executeTakeFirst();
  return row ? row.last_heartbeat_at : undefined;
}

/** The machine an offer belongs to, or null for an unknown offer id. */
export async function machineIdOfOffer(db: Executor, offerId: string): Promise<string | null> {
  const row = await db.selectFrom('offers').select('machine_id').where('id', '=', offerId).executeTakeFirst();
  return row?.machine_id ?? null;
}

/** The owner's machines, oldest first, after the (created_at, id) position. */
export async function listMachinesOfOwner(
  db: Executor,
  ownerAccountId: string,
  after: [string, string] | null,
  fetch: number,
): Promise<MachineRow[]> {
  let query = db.selectFrom('machines').selectAll().where('owner_account_id', '=', ownerAccountId);
  if (after) {
    const [createdAt, id] = after;
    query = query.where((eb) => eb.or([eb('created_at', '>', createdAt), eb.and([eb('created_at', '=', createdAt), eb('id', '>', id)])]));
  }
  return query.orderBy('created_at').orderBy('id').limit(fetch).execute();
}

/** The go-live state the pairing's installer sees once its agent enrolled; null before. */
export async function machineOfPairing(db: Executor, pairingId: string): Promise<PairingMachine | null> {
  const row = await db
    .selectFrom('machines')
    .select(['id', 'live_state', 'live_error'])
    .where('pairing_id', '=', pairingId)
    .executeTakeFirst();
  return row ? { machine_id: row.id, live: row.live_state, error: row.live_error } : null;
}

/** What a heartbeat writes on the machine row (liveness at the control plane's clock, never the agent's). */
export interface HeartbeatWrite {
  at: Date;
  healthy: boolean;
  problems: string[];
  uptimeS: bigint;
  live: MachineLiveState;
  liveError: string | null;
}

/**
 * Writes a heartbeat and its go-live state by compare-and-set on the state read before (`expectedLiveState`), so a
 * racing heartbeat never moves it twice. False: the state moved under us and nothing was written.
 */
export async function writeHeartbeat(
  db: Executor,
  machineId: string,
  write: HeartbeatWrite,
  expectedLiveState: MachineLiveState,
): Promise<boolean> {
  const result = await db
    .updateTable('machines')
    .set({
      last_heartbeat_at: iso(write.at),
      healthy: fromBool(write.healthy),
      problems: toJson(write.problems),
      uptime_s: write.uptimeS,
      live_state: write.live,
      live_error: write.liveError,
      updated_at: iso(write.at),
    })
    .where('id', '=', machineId)
    .where('live_state', '=', expectedLiveState)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Liveness and health only: the heartbeat of a machine whose go-live state another writer just moved. */
export async function writeLiveness(
  db: Executor,
  machineId: string,
  write: Pick<HeartbeatWrite, 'at' | 'healthy' | 'problems'>,
): Promise<void> {
  await db
    .updateTable('machines')
    .set({
      last_heartbeat_at: iso(write.at),
      healthy: fromBool(write.healthy),
      problems: toJson(write.problems),
      updated_at: iso(write.at),
    })
    .where('id', '=', machineId)
    .execute();
}

/** The host turns go-live on or off. Turning it on again waits for the next healthy heartbeat. */
export async function setGoLive(db: Executor, machineId: string, goLive: boolean, now: Date): Promise<void> {
  await db
    .updateTable('machines')
    .set({ go_live: fromBool(goLive), live_state: initialLiveState(goLive), live_error: null, updated_at: iso(now) })
    .where('id', '=', machineId)
    .execute();
}

/** The host lists the machine as a CPU machine, or stops listing it so. */
export async function setCpuListed(db: Executor, machineId: string, listed: boolean, now: Date): Promise<void> {
  await db
    .updateTable('machines')
    .set({ cpu_listed: fromBool(listed), updated_at: iso(now) })
    .where('id', '=', machineId)
    .execute();
}

/** Replaces the machine's network facts unless a later measurement is stored already (false then). */
export async function writeNetworkFacts(db: Executor, machineId: string, facts: MeasuredNetwork, now: Date): Promise<boolean> {
  const at = iso(facts.measuredAt);
  const result = await db
    .updateTable('machines')
    .set({
      net_download_mbps: facts.downloadMbps,
      net_upload_mbps: facts.uploadMbps,
      net_latency_ms: facts.latencyMs,
      net_measured_at: at,
      net_error: facts.error,
      updated_at: iso(now),
    })
    .where('id', '=', machineId)
    .where((eb) => eb.or([eb('net_measured_at', 'is', null), eb('net_measured_at', '<=', at)]))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** The bandwidth the machine's offer shows (null: nothing measured, or the latest measurement failed). */
export async function writeOfferBandwidth(db: Executor, machineId: string, bandwidthMbps: bigint | null, now: Date): Promise<void> {
  await db
    .updateTable('offers')
    .set({ measured_bandwidth_mbps: bandwidthMbps, updated_at: iso(now) })
    .where('machine_id', '=', machineId)
    .execute();
}
