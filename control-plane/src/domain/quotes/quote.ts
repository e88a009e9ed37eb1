import type { GpuManifest, MaintenanceWindow } from '@ark/shared';
import { DomainError } from '../../errors.js';

// Quotes (contract part 2 "Quote"): a binding price for one machine, valid 60 seconds. Pure rules only.

export const QUOTE_LIFETIME_MS = 60_000;
/** The backend every machine runs today: NVIDIA GPUs with CUDA (machines without GPUs run the same images). */
export const MACHINE_BACKEND = 'cuda' as const;

/** Exactly one of template_id and image_digest. */
export function assertOneImageSource(body: { template_id?: string; image_digest?: string }): void {
  const given = Number(body.template_id !== undefined) + Number(body.image_digest !== undefined);
  if (given !== 1)
    throw new DomainError('VALIDATION_FAILED', 'body must have exactly one of the properties "template_id" and "image_digest"');
}

export interface Availability {
  availableFrom: Date;
  availableUntil: Date;
  maintenanceWindows: readonly MaintenanceWindow[];
}

/** [start, end) must lie inside the offer's availability and touch no maintenance window. */
export function assertWindowAvailable(offer: Availability, start: Date, end: Date): void {
  if (start.getTime() < offer.availableFrom.getTime() || end.getTime() > offer.availableUntil.getTime()) {
    throw new DomainError(
      'OUTSIDE_AVAILABILITY',
      `The offer is available from ${offer.availableFrom.toISOString()} until ${offer.availableUntil.toISOString()}; the requested duration ends at ${end.toISOString()}.`,
    );
  }
  const clash = offer.maintenanceWindows.find(
    (w) => new Date(w.starts_at).getTime() < end.getTime() && new Date(w.ends_at).getTime() > start.getTime(),
  );
  if (clash) {
    throw new DomainError(
      'MAINTENANCE_CONFLICT',
      `A maintenance window (${clash.starts_at} to ${clash.ends_at}) falls inside the requested duration; choose a shorter one.`,
    );
  }
}

/**
 * The host-availability ceiling snapshotted at reservation: the end of availability or the start of the next
 * maintenance window after `now`, whichever comes first. No job runs past it.
 */
export function hostCeilingOf(offer: Availability, now: Date): Date {
  let ceiling = offer.availableUntil.getTime();
  for (const w of offer.maintenanceWindows) {
    const starts = new Date(w.starts_at).getTime();
    const ends = new Date(w.ends_at).getTime();
    // A window already under way caps at now; one already over does not count.
    if (ends > now.getTime() && starts < ceiling) ceiling = Math.max(starts, now.getTime());
  }
  return new Date(ceiling);
}

/**
 * How many units of the machine a new job could take now: its GPUs no occupying job holds, or for a machine without
 * GPUs (rented whole) 1 while no job occupies it. 0 means it is rented out: its offer is listed as unavailable and a
 * quote on it is refused (assignGpus), the same rule.
 */
export function freeUnitsOf(gpus: readonly GpuManifest[], occupied: ReadonlySet<string>, occupyingJobs: number): number {
  if (gpus.length === 0) return occupyingJobs > 0 ? 0 : 1;
  return gpus.filter((g) => !occupied.has(g.pci_address)).length;
}

/**
 * Picks `count` GPUs of the machine that no occupying job holds, in manifest order. A machine without GPUs is
 * rented whole: gpu_count 1, no device assigned, and only while no other job occupies it.
 */
export function assignGpus(gpus: readonly GpuManifest[], occupied: ReadonlySet<string>, occupyingJobs: number, count: number): string[] {
  if (gpus.length === 0) {
    if (count !== 1) throw new DomainError('GPUS_NOT_AVAILABLE', 'This machine has no GPUs: it is rented whole, with gpu_count 1.');
    if (occupyingJobs > 0) throw new DomainError('MACHINE_NOT_AVAILABLE', 'This machine is rented by another job right now.');
    return [];
  }
  if (count > gpus.length) throw new DomainError('GPUS_NOT_AVAILABLE', `This machine has ${gpus.length} GPUs.`);
  const free = gpus.filter((g) => !occupied.has(g.pci_address)).map((g) => g.pci_address);
  if (free.length < count)
    throw new DomainError('GPUS_NOT_AVAILABLE', `Only ${free.length} of this machine's ${gpus.length} GPUs are free right now.`);
  return free.slice(0, count);
}

/** A stored quote, as the domain sees it. */
export interface QuoteRecord {
  id: string;
  accountId: string;
  machineId: string;
  offerId: string;
  offerVersion: bigint;
  gpuCount: number;
  machineRateMicroPerHour: bigint;
  platformFeeBps: bigint;
  budgetMicro: bigint;
  durationLimitS: bigint;
  estimatedTotalMicro: bigint;
  manifestHash: string;
  imageDigest: string;
  templateId: string | null;
  termsVersion: string;
  includedDiskGib: number;
  includedEgressGib: number;
  hostCeilingAt: Date;
  createdAt: Date;
  expiresAt: Date;
  usedAt: Date | null;
  jobId: string | null;
}

/** Whether a reservation may consume this quote now; throws the contract's 409s. */
export function assertQuoteUsable(q: QuoteRecord, now: Date): void {
  if (q.usedAt !== null) throw new DomainError('QUOTE_ALREADY_USED');
  if (now.getTime() >= q.expiresAt.getTime()) throw new DomainError('QUOTE_EXPIRED');
}
