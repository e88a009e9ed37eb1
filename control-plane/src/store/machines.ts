import type { HeartbeatMessage, MachineManifest, NettestReceiptMessage, PairingMachine } from '@ark/shared';
import type { Selectable } from 'kysely';
import { initialLiveState, onHeartbeat } from '../domain/machines/go-live.js';
import { manifestFacts, manifestHash } from '../domain/machines/manifest.js';
import { bandwidthMbpsOf } from '../domain/offers/offer.js';
import type { MachineDirectory } from '../gateway/handlers.js';
import { type Executor, fromBool, type Store, toJson } from './db.js';
import type { HeartbeatBuffer } from './heartbeats.js';
import { markOfferListed } from './offers.js';
import type { MachinesTable } from './tables/hosts.js';

// Machines: enrolled rigs, their go-live state, last heartbeat and network facts.

export type MachineRow = Selectable<MachinesTable>;

const iso = (date: Date): string => date.toISOString();

/** How the gateway finds the key a machine signs its frames with. */
export function machineDirectory(store: Store): MachineDirectory {
  return {
    async publicKeyOf(machineId) {
      const row = await store.db.selectFrom('machines').select('public_key').where('id', '=', machineId).executeTakeFirst();
      return row?.public_key ?? null;
    },
  };
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
    live_state: initialLiveState(machine.goLive),
    live_error: null,
    last_heartbeat_at: null,
    healthy: null,
    problems: '[]',
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

/**
 * A heartbeat: liveness (last_heartbeat_at, at the control plane's clock, never the agent's) and the go-live
 * transition. The state moves by compare-and-set, so a racing heartbeat never moves it twice. When the machine
 * goes live its offer is listed (unverified) in the same transaction.
 */
export async function recordHeartbeat(
  db: Executor,
  machineId: string,
  heartbeat: HeartbeatMessage,
  now: Date,
): Promise<MachineRow | undefined> {
  const machine = await findMachine(db, machineId);
  if (!machine) return undefined;
  const next = onHeartbeat(machine.live_state, machine.live_error, heartbeat);
  const result = await db
    .updateTable('machines')
    .set({
      last_heartbeat_at: iso(now),
      healthy: fromBool(heartbeat.healthy),
      problems: toJson(heartbeat.problems),
      uptime_s: BigInt(heartbeat.uptime_s),
      live_state: next.live,
      live_error: next.error,
      updated_at: iso(now),
    })
    .where('id', '=', machineId)
    .where('live_state', '=', machine.live_state)
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) !== 1) {
    // The state moved under us: record liveness only; the winner applied the transition.
    await db
      .updateTable('machines')
      .set({
        last_heartbeat_at: iso(now),
        healthy: fromBool(heartbeat.healthy),
        problems: toJson(heartbeat.problems),
        updated_at: iso(now),
      })
      .where('id', '=', machineId)
      .execute();
  } else if (next.wentLive) {
    await markOfferListed(db, machineId, now);
  }
  return findMachine(db, machineId);
}

/**
 * A heartbeat as the channel delivers it: one that changes nothing but last-seen (same health, same problems, the
 * go-live state staying put, seen before) goes to the write-behind buffer; any other is applied at once in its own
 * transaction. The check is a read outside any transaction; a state change racing it (the host turning go-live
 * on) is picked up by the next heartbeat, as a heartbeat just before the change would have been.
 * Returns whether the heartbeat was applied at once.
 */
export async function recordHeartbeatCoalesced(
  store: Store,
  buffer: HeartbeatBuffer,
  machineId: string,
  heartbeat: HeartbeatMessage,
  now: Date,
): Promise<boolean> {
  const machine = await findMachine(store.db, machineId);
  if (!machine) return false;
  const next = onHeartbeat(machine.live_state, machine.live_error, heartbeat);
  const unchanged =
    machine.last_heartbeat_at !== null &&
    !next.wentLive &&
    next.live === machine.live_state &&
    next.error === machine.live_error &&
    machine.healthy === fromBool(heartbeat.healthy) &&
    machine.problems === toJson(heartbeat.problems);
  if (unchanged) {
    await buffer.add(machineId, now, BigInt(heartbeat.uptime_s));
    return false;
  }
  buffer.forget(machineId);
  await store.db.transaction().execute((trx) => recordHeartbeat(trx, machineId, heartbeat, now));
  return true;
}

/** The host turns go-live on or off. Turning it on again waits for the next healthy heartbeat. */
export async function setGoLive(db: Executor, machineId: string, goLive: boolean, now: Date): Promise<void> {
  await db
    .updateTable('machines')
    .set({ go_live: fromBool(goLive), live_state: initialLiveState(goLive), live_error: null, updated_at: iso(now) })
    .where('id', '=', machineId)
    .execute();
}

/**
 * A network measurement receipt: the latest measurement replaces the machine's network facts and the bandwidth its
 * offer shows. An older measurement than the one stored (a late resend) changes nothing.
 */
export async function recordNettestReceipt(db: Executor, machineId: string, receipt: NettestReceiptMessage, now: Date): Promise<boolean> {
  const measuredAt = new Date(receipt.measured_at);
  // Never trust a clock ahead of ours.
  const at = iso(measuredAt.getTime() > now.getTime() ? now : measuredAt);
  const download = receipt.download_mbps ?? null;
  const upload = receipt.upload_mbps ?? null;
  const result = await db
    .updateTable('machines')
    .set({
      net_download_mbps: download,
      net_upload_mbps: upload,
      net_latency_ms: receipt.latency_ms ?? null,
      net_measured_at: at,
      net_error: receipt.error ?? null,
      updated_at: iso(now),
    })
    .where('id', '=', machineId)
    .where((eb) => eb.or([eb('net_measured_at', 'is', null), eb('net_measured_at', '<=', at)]))
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) !== 1) return false;
  // The offer shows what the latest measurement found; a failed one shows nothing rather than a stale figure.
  await db
    .updateTable('offers')
    .set({ measured_bandwidth_mbps: bandwidthMbpsOf(download, upload), updated_at: iso(now) })
    .where('machine_id', '=', machineId)
    .execute();
  return true;
}
