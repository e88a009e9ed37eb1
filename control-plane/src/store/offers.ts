import { randomUUID } from 'node:crypto';
import type { MachineManifest, MaintenanceWindow } from '@ark/shared';
import { iso } from '../clock.js';
import type { ListedOffer, OfferTerms, OfferVersionRecord } from '../domain/offers/offer.js';
import { freeUnitsOf } from '../domain/quotes/quote.js';
import { DomainError } from '../errors.js';
import { type Executor, fromJson, isUniqueViolation, toBool } from './db.js';
import { occupancyOfMachines } from './jobs.js';
import { type KeysetPosition, keysetPage } from './keyset.js';
import { openListing } from './market.js';

// Offers: one per machine, with immutable versions. The current version moves only by compare-and-set. Reads answer
// the domain's records (domain/offers/offer.ts).

async function insertVersion(
  db: Executor,
  offerId: string,
  version: bigint,
  terms: OfferTerms,
  accountId: string | null,
  now: Date,
): Promise<void> {
  await db
    .insertInto('offer_versions')
    .values({
      offer_id: offerId,
      version,
      rate_micro_per_hour: terms.rateMicroPerHour,
      included_disk_gib: BigInt(terms.includedDiskGib),
      included_egress_gib: BigInt(terms.includedEgressGib),
      available_from: iso(terms.availableFrom),
      available_until: iso(terms.availableUntil),
      created_at: iso(now),
      created_by_account_id: accountId,
    })
    .execute();
  if (terms.maintenanceWindows.length > 0) {
    await db
      .insertInto('offer_maintenance_windows')
      .values(
        terms.maintenanceWindows.map((w, i) => ({
          offer_id: offerId,
          version,
          position: BigInt(i),
          starts_at: w.starts_at,
          ends_at: w.ends_at,
          reason: w.reason,
        })),
      )
      .execute();
  }
}

/** The go-live seed: version 1, not listed until the machine's first healthy heartbeat. */
export async function seedOffer(db: Executor, input: { machineId: string; terms: OfferTerms; now: Date }): Promise<{ offerId: string }> {
  const offerId = randomUUID();
  await db
    .insertInto('offers')
    .values({
      id: offerId,
      machine_id: input.machineId,
      current_version: 1n,
      listed: 0n,
      seeded: 1n,
      measured_bandwidth_mbps: null,
      created_at: iso(input.now),
      updated_at: iso(input.now),
    })
    .execute();
  await insertVersion(db, offerId, 1n, input.terms, null, input.now);
  return { offerId };
}

/** Lists the machine's offer (go-live). */
export async function markOfferListed(db: Executor, machineId: string, now: Date): Promise<void> {
  await db
    .updateTable('offers')
    .set({ listed: 1n, updated_at: iso(now) })
    .where('machine_id', '=', machineId)
    .execute();
  await openListing(db, machineId, now);
}

/**
 * Commits a new version when the current one is `expectedVersion` (0: none yet), in one compare-and-set
 * statement; anything else is OFFER_VERSION_MISMATCH. A host's commit lists the offer.
 */
export async function commitOfferVersion(
  db: Executor,
  input: { machineId: string; expectedVersion: bigint; terms: OfferTerms; accountId: string; now: Date },
): Promise<{ offerId: string; version: bigint }> {
  const { machineId, expectedVersion, now } = input;
  const mismatch = () =>
    new DomainError(
      'OFFER_VERSION_MISMATCH',
      `The offer is not at version ${expectedVersion}; read the machine and retry with its current offer_version.`,
    );
  if (expectedVersion === 0n) {
    const existing = await db.selectFrom('offers').select('id').where('machine_id', '=', machineId).executeTakeFirst();
    if (existing) throw mismatch();
    const offerId = randomUUID();
    try {
      await db
        .insertInto('offers')
        .values({
          id: offerId,
          machine_id: machineId,
          current_version: 1n,
          listed: 1n,
          seeded: 0n,
          measured_bandwidth_mbps: null,
          created_at: iso(now),
          updated_at: iso(now),
        })
        .execute();
    } catch (error) {
      if (isUniqueViolation(error)) throw mismatch();
      throw error;
    }
    await insertVersion(db, offerId, 1n, input.terms, input.accountId, now);
    await openListing(db, machineId, now);
    return { offerId, version: 1n };
  }
  const moved = await db
    .updateTable('offers')
    .set((eb) => ({ current_version: eb('current_version', '+', 1n), listed: 1n, seeded: 0n, updated_at: iso(now) }))
    .where('machine_id', '=', machineId)
    .where('current_version', '=', expectedVersion)
    .executeTakeFirst();
  if (Number(moved.numUpdatedRows) !== 1) throw mismatch();
  const offer = await db.selectFrom('offers').select('id').where('machine_id', '=', machineId).executeTakeFirstOrThrow();
  const version = expectedVersion + 1n;
  await insertVersion(db, offer.id, version, input.terms, input.accountId, now);
  await openListing(db, machineId, now);
  return { offerId: offer.id, version };
}

const versionColumns = [
  'offers.id as offer_id',
  'offers.machine_id',
  'offers.current_version',
  'offers.listed',
  'offers.seeded',
  'offers.measured_bandwidth_mbps',
  'offer_versions.rate_micro_per_hour',
  'offer_versions.included_disk_gib',
  'offer_versions.included_egress_gib',
  'offer_versions.available_from',
  'offer_versions.available_until',
  'offer_versions.created_at as committed_at',
] as const;

type VersionRow = {
  offer_id: string;
  machine_id: string;
  current_version: bigint;
  listed: bigint;
  seeded: bigint;
  measured_bandwidth_mbps: bigint | null;
  rate_micro_per_hour: bigint;
  included_disk_gib: bigint;
  included_egress_gib: bigint;
  available_from: string;
  available_until: string;
  committed_at: string;
};

function toView(row: VersionRow, windows: MaintenanceWindow[]): OfferVersionRecord {
  return {
    offerId: row.offer_id,
    machineId: row.machine_id,
    version: row.current_version,
    listed: toBool(row.listed),
    seeded: toBool(row.seeded),
    measuredBandwidthMbps: row.measured_bandwidth_mbps,
    rateMicroPerHour: row.rate_micro_per_hour,
    includedDiskGib: Number(row.included_disk_gib),
    includedEgressGib: Number(row.included_egress_gib),
    availableFrom: row.available_from,
    availableUntil: row.available_until,
    maintenanceWindows: windows,
    committedAt: row.committed_at,
  };
}

/** Maintenance windows of the given current versions, in order, keyed by offer id. */
async function windowsOf(db: Executor, versions: Array<{ offerId: string; version: bigint }>): Promise<Map<string, MaintenanceWindow[]>> {
  const result = new Map<string, MaintenanceWindow[]>();
  if (versions.length === 0) return result;
  const rows = await db
    .selectFrom('offer_maintenance_windows')
    .select(['offer_id', 'version', 'starts_at', 'ends_at', 'reason'])
    .where((eb) => eb.or(versions.map((v) => eb.and([eb('offer_id', '=', v.offerId), eb('version', '=', v.version)]))))
    .orderBy('offer_id')
    .orderBy('position')
    .execute();
  for (const row of rows) {
    const list = result.get(row.offer_id) ?? [];
    list.push({ starts_at: row.starts_at, ends_at: row.ends_at, reason: row.reason });
    result.set(row.offer_id, list);
  }
  return result;
}

/** The machine's current offer version, or undefined when it has none. */
export async function currentOfferOf(db: Executor, machineId: string): Promise<OfferVersionRecord | undefined> {
  const row = await db
    .selectFrom('offers')
    .innerJoin('offer_versions', (join) =>
      join.onRef('offer_versions.offer_id', '=', 'offers.id').onRef('offer_versions.version', '=', 'offers.current_version'),
    )
    .select(versionColumns)
    .where('offers.machine_id', '=', machineId)
    .executeTakeFirst();
  if (!row) return undefined;
  const windows = await windowsOf(db, [{ offerId: row.offer_id, version: row.current_version }]);
  return toView(row, windows.get(row.offer_id) ?? []);
}

export interface OfferFilter {
  gpuModel?: string;
  minVramBytes?: bigint;
  minGpuCount?: number;
  region?: string;
  /** A ceiling on the machine rate (the renter's total-rate ceiling, converted by pricing). */
  maxMachineRateMicroPerHour?: bigint;
  availableAt?: Date;
  /** Machines scored at least this (ten-thousandths) and no longer new (GET /api/v1/offers min_reliability). */
  minReliabilityE4?: number;
  /** Machines whose verified hardware score is at least this (GET /api/v1/offers min_score). */
  minHardwareScore?: number;
  now: Date;
}

/**
 * Listed offers of live machines whose availability has not ended, cheapest first (then by offer id), after
 * the (rate, offer id) position.
 */
export async function listOffers(db: Executor, filter: OfferFilter, after: KeysetPosition | null, fetch: number): Promise<ListedOffer[]> {
  let query = db
    .selectFrom('offers')
    .innerJoin('offer_versions', (join) =>
      join.onRef('offer_versions.offer_id', '=', 'offers.id').onRef('offer_versions.version', '=', 'offers.current_version'),
    )
    .innerJoin('machines', 'machines.id', 'offers.machine_id')
    .leftJoin('machine_reliability', 'machine_reliability.machine_id', 'offers.machine_id')
    .leftJoin('machine_verification', 'machine_verification.machine_id', 'offers.machine_id')
    .select(versionColumns)
    .select([
      'machines.gpu_count',
      'machines.gpu_model',
      'machines.vram_bytes',
      'machines.ram_bytes',
      'machines.disk_bytes',
      'machines.region',
      'machines.manifest_hash',
      'machines.live_state',
      'machines.last_heartbeat_at',
      'machines.healthy',
      'machines.manifest',
      'machine_reliability.score_e4',
      'machine_reliability.is_new',
      'machine_verification.score as hardware_score',
      'machine_verification.verified_at',
    ])
    .where('offers.listed', '=', 1n)
    // A machine held under the reliability floor is not offered to new rentals.
    .where((eb) => eb.or([eb('machine_reliability.held', 'is', null), eb('machine_reliability.held', '=', 0n)]))
    // Nor is a machine whose latest hardware receipt contradicts what it declared.
    .where((eb) => eb.or([eb('machine_verification.unlisted', 'is', null), eb('machine_verification.unlisted', '=', 0n)]))
    .where('machines.live_state', '=', 'live')
    // A machine that reports no GPU is offered only as a CPU machine, when its host lists it so.
    .where((eb) => eb.or([eb('machines.gpu_count', '>=', 1n), eb('machines.cpu_listed', '=', 1n)]))
    .where('offer_versions.available_until', '>', iso(filter.now));
  if (filter.gpuModel !== undefined) query = query.where('machines.gpu_model', '=', filter.gpuModel);
  if (filter.minVramBytes !== undefined) query = query.where('machines.vram_bytes', '>=', filter.minVramBytes);
  if (filter.minGpuCount !== undefined && filter.minGpuCount > 0)
    query = query.where('machines.gpu_count', '>=', BigInt(filter.minGpuCount));
  if (filter.region !== undefined) query = query.where('machines.region', '=', filter.region);
  if (filter.maxMachineRateMicroPerHour !== undefined)
    query = query.where('offer_versions.rate_micro_per_hour', '<=', filter.maxMachineRateMicroPerHour);
  if (filter.minReliabilityE4 !== undefined) {
    query = query.where('machine_reliability.score_e4', '>=', BigInt(filter.minReliabilityE4)).where('machine_reliability.is_new', '=', 0n);
  }
  if (filter.minHardwareScore !== undefined) query = query.where('machine_verification.score', '>=', filter.minHardwareScore);
  if (filter.availableAt !== undefined) {
    const at = iso(filter.availableAt);
    query = query
      .where('offer_versions.available_from', '<=', at)
      .where('offer_versions.available_until', '>', at)
      .where(({ not, exists, selectFrom }) =>
        not(
          exists(
            selectFrom('offer_maintenance_windows as w')
              .select('w.position')
              .whereRef('w.offer_id', '=', 'offers.id')
              .whereRef('w.version', '=', 'offers.current_version')
              .where('w.starts_at', '<=', at)
              .where('w.ends_at', '>', at),
          ),
        ),
      );
  }
  // The cursor carries the rate as a decimal string (JSON has no bigint).
  const position = after ? ([BigInt(after[0] as string), after[1]] as const) : null;
  const rows = await keysetPage(query, ['offer_versions.rate_micro_per_hour', 'offers.id'], 'asc', position, fetch).execute();
  const windows = await windowsOf(
    db,
    rows.map((r) => ({ offerId: r.offer_id, version: r.current_version })),
  );
  const occupancy = await occupancyOfMachines(
    db,
    rows.map((r) => r.machine_id),
  );
  return rows.map((row) => ({
    ...toView(row, windows.get(row.offer_id) ?? []),
    machine: {
      gpuCount: Number(row.gpu_count),
      gpuModel: row.gpu_model,
      vramBytes: row.vram_bytes,
      ramBytes: row.ram_bytes,
      diskBytes: row.disk_bytes,
      region: row.region,
      manifestHash: row.manifest_hash,
      liveState: row.live_state,
      lastHeartbeatAt: row.last_heartbeat_at,
      healthy: row.healthy === null ? null : toBool(row.healthy),
      jobLimits: fromJson<MachineManifest>(row.manifest)?.job_limits ?? null,
      freeUnits: freeUnitsOf(
        fromJson<MachineManifest>(row.manifest)?.gpus ?? [],
        occupancy.get(row.machine_id)?.pciAddresses ?? new Set(),
        occupancy.get(row.machine_id)?.jobs ?? 0,
      ),
    },
    reliability: row.score_e4 === null ? null : { scoreE4: Number(row.score_e4), isNew: toBool(row.is_new) },
    verification: { score: row.hardware_score === null ? null : Number(row.hardware_score), verifiedAt: row.verified_at },
  }));
}
