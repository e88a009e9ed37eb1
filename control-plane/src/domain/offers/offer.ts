import type { JobLimits, MaintenanceWindow, OfferCommitRequest } from '@ark/shared';
import { DomainError } from '../../errors.js';

// Versioned future offers (contract parts 1, 4, 9). Each commit is a new immutable version; the machine's
// current version moves by compare-and-set on `expected_version`. A new version never changes a running price:
// a job snapshots its rate from the quote at reservation and is billed from that snapshot only.

/** Highest machine rate accepted: 10^15 micro (a billion USDC) an hour keeps every product far inside int64. */
export const OFFER_RATE_MAX_MICRO_PER_HOUR = 1_000_000_000_000_000n;
/** The seeded offer at go-live covers the next 30 days. */
export const SEED_OFFER_DAYS = 30;

export interface OfferTerms {
  rateMicroPerHour: bigint;
  includedDiskGib: number;
  includedEgressGib: number;
  availableFrom: Date;
  availableUntil: Date;
  maintenanceWindows: MaintenanceWindow[];
}

/** An offer's version as read back: its terms, whether it is listed, when it was committed. */
export interface OfferVersionRecord {
  offerId: string;
  machineId: string;
  version: bigint;
  listed: boolean;
  seeded: boolean;
  measuredBandwidthMbps: bigint | null;
  rateMicroPerHour: bigint;
  includedDiskGib: number;
  includedEgressGib: number;
  availableFrom: string;
  availableUntil: string;
  maintenanceWindows: MaintenanceWindow[];
  committedAt: string;
}

/** A listed offer with the facts renters filter and see about its machine (GET /api/v1/offers). */
export interface ListedOffer extends OfferVersionRecord {
  machine: {
    gpuCount: number;
    gpuModel: string | null;
    vramBytes: bigint | null;
    ramBytes: bigint;
    diskBytes: bigint;
    region: string | null;
    manifestHash: string;
    liveState: 'waiting' | 'live' | 'failed' | 'off';
    lastHeartbeatAt: string | null;
    healthy: boolean | null;
    /** What each job may use, as the agent's manifest announced it; null for an agent older than confinement. */
    jobLimits: JobLimits | null;
    /** What a new job could take now (domain/quotes/quote.ts freeUnitsOf): 0 while the machine is rented out. */
    freeUnits: number;
  };
  /** The reliability worker's last score; null before it scored the machine. */
  reliability: { scoreE4: number; isNew: boolean } | null;
  /** The machine's verified hardware score and when it was measured; null before a benchmarked receipt. */
  verification: { score: number | null; verifiedAt: string | null };
}

const invalid = (field: string, message: string): never => {
  throw new DomainError('VALIDATION_FAILED', `body/${field} ${message}`);
};

/**
 * Checks what the schema cannot: the rate, the availability (until after from, and still in the future) and the
 * maintenance windows (each ends after it starts, inside the availability, ordered, not overlapping).
 * Throws VALIDATION_FAILED naming the field.
 */
export function validateOfferCommit(body: OfferCommitRequest, now: Date): OfferTerms {
  const rate = BigInt(body.rate_micro_per_hour);
  if (rate < 1n) invalid('rate_micro_per_hour', 'must be at least 1');
  if (rate > OFFER_RATE_MAX_MICRO_PER_HOUR) invalid('rate_micro_per_hour', `must be at most ${OFFER_RATE_MAX_MICRO_PER_HOUR}`);
  const from = new Date(body.available_from);
  const until = new Date(body.available_until);
  if (Number.isNaN(from.getTime())) invalid('available_from', 'is not a valid date-time');
  if (Number.isNaN(until.getTime())) invalid('available_until', 'is not a valid date-time');
  if (until.getTime() <= from.getTime()) invalid('available_until', 'must be after available_from');
  if (until.getTime() <= now.getTime()) invalid('available_until', 'must be in the future');
  const windows = body.maintenance_windows ?? [];
  let previousEnd: Date | null = null;
  windows.forEach((window, i) => {
    const starts = new Date(window.starts_at);
    const ends = new Date(window.ends_at);
    if (Number.isNaN(starts.getTime())) invalid(`maintenance_windows/${i}/starts_at`, 'is not a valid date-time');
    if (Number.isNaN(ends.getTime())) invalid(`maintenance_windows/${i}/ends_at`, 'is not a valid date-time');
    if (ends.getTime() <= starts.getTime()) invalid(`maintenance_windows/${i}/ends_at`, 'must be after starts_at');
    if (starts.getTime() < from.getTime()) invalid(`maintenance_windows/${i}/starts_at`, 'must not be before available_from');
    if (ends.getTime() > until.getTime()) invalid(`maintenance_windows/${i}/ends_at`, 'must not be after available_until');
    if (previousEnd !== null && starts.getTime() < previousEnd.getTime()) {
      invalid(`maintenance_windows/${i}/starts_at`, 'must not be before the previous window ends (windows are ordered and never overlap)');
    }
    previousEnd = ends;
  });
  return {
    rateMicroPerHour: rate,
    includedDiskGib: body.included_quotas.included_disk_gib,
    includedEgressGib: body.included_quotas.included_egress_gib,
    availableFrom: from,
    availableUntil: until,
    // Stored as given, with timestamps normalised to milliseconds UTC.
    maintenanceWindows: windows.map((w) => ({
      starts_at: new Date(w.starts_at).toISOString(),
      ends_at: new Date(w.ends_at).toISOString(),
      reason: w.reason,
    })),
  };
}

/** The offer a machine starts with when its host chose go-live: the configured rate, available for 30 days. */
export function seedOfferTerms(rateMicroPerHour: bigint, now: Date): OfferTerms {
  return {
    rateMicroPerHour,
    includedDiskGib: 0,
    includedEgressGib: 0,
    availableFrom: now,
    availableUntil: new Date(now.getTime() + SEED_OFFER_DAYS * 86_400_000),
    maintenanceWindows: [],
  };
}

/** Is the machine offered at `at`: inside the availability and outside every maintenance window. */
export function isAvailableAt(terms: Pick<OfferTerms, 'availableFrom' | 'availableUntil' | 'maintenanceWindows'>, at: Date): boolean {
  const t = at.getTime();
  if (t < terms.availableFrom.getTime() || t >= terms.availableUntil.getTime()) return false;
  return !terms.maintenanceWindows.some((w) => t >= new Date(w.starts_at).getTime() && t < new Date(w.ends_at).getTime());
}

/** Bandwidth shown to renters: the slower direction, whole Mbps. Null before any measurement. */
export function bandwidthMbpsOf(downloadMbps: number | null, uploadMbps: number | null): bigint | null {
  const known = [downloadMbps, uploadMbps].filter((v): v is number => v !== null && Number.isFinite(v) && v >= 0);
  if (known.length === 0) return null;
  return BigInt(Math.floor(Math.min(...known)));
}
