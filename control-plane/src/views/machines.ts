import type { JobRecord } from '../domain/jobs/job.js';
import {
  type Machine,
  type MachineCpuListing,
  type MachineGoLive,
  type MachineOffer,
  type MachineRental,
  type NettestQueued,
  TELEMETRY_BUCKET_S,
  TELEMETRY_RETENTION_S,
  type TelemetryBucket,
  type TelemetryDevice,
  type TelemetryHost,
  type TelemetryResponse,
  type TelemetrySummary,
} from '@ark/shared';
import type { Config } from '../config/index.js';
import { livenessAt, readinessOf } from '../domain/machines/go-live.js';
import { scoreText } from '../domain/machines/reliability.js';
import type { OfferVersionRecord } from '../domain/offers/offer.js';
import { totalRateMicroPerHour } from '../domain/pricing.js';
import { type BucketContribution, type FieldStats, GPU_FIELDS, HOST_DEVICE, HOST_FIELDS } from '../domain/telemetry/rollup.js';
import type {
  CpuListingRecord,
  GoLiveRecord,
  MachineHardwareRecord,
  MachineRecord,
  MachineReliabilityRecord,
  QueuedCommand,
} from '../services/hosting/index.js';

// A host's machines as the wire shows them (shared/src/http/hosts.ts): the machine with its current offer and score,
// its go-live, the network test it queued, its telemetry.

/** What the machine view needs of the configuration: liveness, the fee on the total rate, the reliability floor. */
export type MachineViewConfig = Pick<Config, 'heartbeatIntervalMs' | 'platformFeeBps'> & {
  reliability: Pick<Config['reliability'], 'floorE4'>;
};

/** The host's view of its machine: manifest, go-live, liveness (computed now), network facts, current offer. */
/** A job on the host's machine, as its host sees it (GET /api/v1/hosts/machines/{id} current_rentals). */
export function machineRentalView(job: JobRecord): MachineRental {
  return {
    job_id: job.id,
    state: job.state,
    since: (job.meterStartedAt ?? job.createdAt).toISOString(),
    metered: job.meterStartedAt !== null,
    gpu_count: job.gpuCount,
    earning_rate_micro_per_hour: job.rate.machineRateMicroPerHour.toString(),
    earned_micro: job.chargedHostMicro.toString(),
  };
}

export function machineView(
  machine: MachineRecord,
  offer: OfferVersionRecord | undefined,
  now: Date,
  config: MachineViewConfig,
  reliability?: MachineReliabilityRecord,
  hardware?: MachineHardwareRecord,
): Machine {
  const lastHeartbeat = machine.lastHeartbeatAt ? new Date(machine.lastHeartbeatAt) : null;
  const liveness = livenessAt(lastHeartbeat, now, config.heartbeatIntervalMs);
  const offerView: MachineOffer | null = offer
    ? {
        offer_id: offer.offerId,
        offer_version: offer.version.toString(),
        rate_micro_per_hour: offer.rateMicroPerHour.toString(),
        total_rate_micro_per_hour: totalRateMicroPerHour(offer.rateMicroPerHour, config.platformFeeBps).toString(),
        platform_fee_bps: config.platformFeeBps,
        included_quotas: { included_disk_gib: offer.includedDiskGib, included_egress_gib: offer.includedEgressGib },
        available_from: offer.availableFrom,
        available_until: offer.availableUntil,
        maintenance_windows: offer.maintenanceWindows,
        listed: offer.listed,
        seeded: offer.seeded,
        readiness: readinessOf(machine.liveState, liveness, machine.healthy),
        measured_bandwidth_mbps: offer.measuredBandwidthMbps === null ? null : offer.measuredBandwidthMbps.toString(),
        committed_at: offer.committedAt,
      }
    : null;
  const network = machine.network;
  return {
    machine_id: machine.id,
    hostname: machine.hostname,
    manifest: machine.manifest,
    manifest_hash: machine.manifestHash,
    go_live: machine.goLive,
    cpu_listing: machine.cpuListed,
    live: machine.liveState,
    live_error: machine.liveError,
    liveness,
    last_heartbeat_at: machine.lastHeartbeatAt,
    healthy: machine.healthy,
    problems: machine.problems,
    network:
      network === null
        ? null
        : {
            download_mbps: network.downloadMbps,
            upload_mbps: network.uploadMbps,
            latency_ms: network.latencyMs,
            measured_at: network.measuredAt,
            error: network.error,
          },
    offer: offerView,
    created_at: machine.createdAt,
    ...(reliability ? reliabilityView(reliability, config.reliability.floorE4) : {}),
    ...(hardware ? hardwareView(hardware) : {}),
  };
}

/** The machine's hardware standing and, while a receipt contradicts its manifest, why it is not offered. */
function hardwareView(h: MachineHardwareRecord): Pick<Machine, 'hardware' | 'hardware_hold'> {
  return {
    hardware: { last_receipt_seq: h.lastReceiptSeq, score: h.score, verified_at: h.verifiedAt },
    hardware_hold:
      h.unlisted && h.unlistedSince !== null
        ? {
            reason: 'hardware_contradicted',
            message:
              'Not offered to new rentals: its latest signed self-test receipt contradicts the hardware it declared. Fix it, then ask for a ' +
              'self-test (POST /api/v1/hosts/machines/{id}/selftest); a receipt that agrees lists it again. Running jobs are not affected.',
            contradictions: h.contradictions.map((c) => ({ code: c.code, message: c.message })),
            since: h.unlistedSince,
            ticket_id: h.ticketId,
          }
        : null,
  };
}

/** The machine's score and, while it is held under the floor, why it is not offered to new rentals. */
function reliabilityView(r: MachineReliabilityRecord, floorE4: number): Pick<Machine, 'reliability' | 'reliability_hold'> {
  const score = scoreText(r.scoreE4);
  const floor = scoreText(floorE4);
  return {
    reliability: {
      score,
      new: r.isNew,
      window_from: r.windowFrom,
      counted_s: r.countedS.toString(),
      online_s: r.onlineS.toString(),
      penalized_jobs: Number(r.penalizedJobs),
      computed_at: r.computedAt,
    },
    reliability_hold:
      r.held && r.heldSince !== null
        ? {
            reason: 'below_reliability_floor',
            message: `Not offered to new rentals: reliability ${score} is under the floor ${floor}; it is offered again once the score is back at or above it. Running jobs are not affected.`,
            score,
            floor,
            since: r.heldSince,
          }
        : null,
  };
}

export const machineGoLiveView = (r: GoLiveRecord): MachineGoLive => ({ machine_id: r.machineId, go_live: r.goLive, live: r.live });

export const machineCpuListingView = (r: CpuListingRecord): MachineCpuListing => ({
  machine_id: r.machineId,
  cpu_listing: r.cpuListed,
  gpu_count: r.gpuCount,
});

export const nettestQueuedView = (machineId: string, queued: QueuedCommand): NettestQueued => ({
  machine_id: machineId,
  command_id: queued.commandId,
  state: 'QUEUED' as const,
});

const summary = (s: FieldStats): TelemetrySummary => ({ min: s.min, avg: s.sum / s.count, max: s.max });

/** A stored bucket as the API shows it: devices by PCI address, fields never measured left out. */
export function telemetryBucketView({ bucketStart, samples, stats }: BucketContribution): TelemetryBucket {
  const devices: TelemetryDevice[] = [];
  let host: TelemetryHost | undefined;
  for (const device of [...stats.keys()].sort()) {
    const fields = stats.get(device)!;
    if (device === HOST_DEVICE) {
      const view: Record<string, TelemetrySummary> = {};
      for (const field of HOST_FIELDS) {
        const s = fields.get(field);
        if (s) view[field] = summary(s);
      }
      if (Object.keys(view).length > 0) host = view as TelemetryHost;
      continue;
    }
    const view: Record<string, unknown> = { pci_address: device };
    for (const field of GPU_FIELDS) {
      const s = fields.get(field);
      if (s) view[field] = summary(s);
    }
    devices.push(view as TelemetryDevice);
  }
  return { bucket: bucketStart.toISOString(), samples, devices, ...(host ? { host } : {}) };
}

/** A machine's telemetry over a window, bucketed. */
export const telemetryView = (machineId: string, windowS: number, buckets: BucketContribution[]): TelemetryResponse => ({
  machine_id: machineId,
  window_s: windowS,
  bucket_s: TELEMETRY_BUCKET_S,
  retention_s: TELEMETRY_RETENTION_S,
  buckets: buckets.map(telemetryBucketView),
});
