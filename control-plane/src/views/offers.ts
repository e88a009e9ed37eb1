import type { OfferCommitted, OfferListItem, OfferSummary, TemplateFit } from '@ark/shared';
import { livenessAt, readinessOf } from '../domain/machines/go-live.js';
import { scoreText } from '../domain/machines/reliability.js';
import type { ListedOffer } from '../domain/offers/offer.js';
import { totalRateMicroPerHour } from '../domain/pricing.js';
import type { CommittedOffer } from '../services/hosting/offers.js';

// Offers as the wire shows them (shared/src/http/hosts.ts): the host's commit, and the renter's listing.

/** A committed offer version. */
export const offerCommittedView = (committed: CommittedOffer): OfferCommitted => ({
  machine_id: committed.machineId,
  offer_id: committed.offerId,
  offer_version: committed.version.toString(),
});

/**
 * Contract part 2, OfferSummary: only what a renter may see (never a host address). `expected_version` is the
 * version to name when acting on exactly this offer version, i.e. the offer_version itself.
 */
export function offerSummaryView(
  offer: ListedOffer,
  now: Date,
  config: { heartbeatIntervalMs: number; platformFeeBps: number },
): OfferSummary {
  const m = offer.machine;
  const liveness = livenessAt(m.lastHeartbeatAt ? new Date(m.lastHeartbeatAt) : null, now, config.heartbeatIntervalMs);
  const version = offer.version.toString();
  return {
    offer_id: offer.offerId,
    machine_id: offer.machineId,
    observed_at: now.toISOString(),
    offer_version: version,
    expected_version: version,
    // A machine rented out right now cannot be quoted (MACHINE_NOT_AVAILABLE, GPUS_NOT_AVAILABLE): not ready.
    readiness: m.freeUnits === 0 ? 'unavailable' : readinessOf(m.liveState, liveness, m.healthy),
    total_rate_micro_per_hour: totalRateMicroPerHour(offer.rateMicroPerHour, config.platformFeeBps).toString(),
    included_quotas: { included_disk_gib: offer.includedDiskGib, included_egress_gib: offer.includedEgressGib },
    available_from: offer.availableFrom,
    available_until: offer.availableUntil,
    maintenance_windows: offer.maintenanceWindows,
    ...(m.gpuCount >= 1 ? { gpu_count: m.gpuCount } : {}),
    ...(m.gpuModel !== null ? { model: m.gpuModel } : {}),
    ...(m.vramBytes !== null ? { vram_bytes: m.vramBytes.toString() } : {}),
    ram_bytes: m.ramBytes.toString(),
    disk_bytes: m.diskBytes.toString(),
    ...(offer.measuredBandwidthMbps !== null ? { measured_bandwidth_mbps: offer.measuredBandwidthMbps.toString() } : {}),
    ...(m.region !== null ? { region: m.region } : {}),
    manifest_hash: m.manifestHash,
    ...(m.jobLimits !== null ? { job_limits: m.jobLimits } : {}),
  };
}

/** The machine's reliability for a listing that asked for it (include=reliability); nothing before it is scored. */
function reliabilityOf(offer: ListedOffer): Pick<OfferListItem, 'reliability'> {
  return offer.reliability ? { reliability: { score: scoreText(offer.reliability.scoreE4), new: offer.reliability.isNew } } : {};
}

/** One item of GET /api/v1/offers: the summary, the template's fit when one was named, the score when asked for. */
export function offerListItemView(
  offer: ListedOffer & { fit?: TemplateFit },
  now: Date,
  config: { heartbeatIntervalMs: number; platformFeeBps: number },
  include: { reliability: boolean; verification: boolean },
): OfferListItem {
  return {
    ...offerSummaryView(offer, now, config),
    ...(offer.fit ? { fit: offer.fit } : {}),
    ...(include.reliability ? reliabilityOf(offer) : {}),
    ...(include.verification ? { verification: { score: offer.verification.score, verified_at: offer.verification.verifiedAt } } : {}),
  };
}
