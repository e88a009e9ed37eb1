import { type Static, Type } from '@sinclair/typebox';
import { JobLimits, MachineManifest } from '../channel/manifest.js';
import { ByteCount, DecimalString, Int64String, MicroAmount, MicroTotal, Nullable, Rfc3339Utc, Sha256Hash, Uuid } from '../formats.js';
import { PageQuery } from './common.js';
import { MachineLiveState } from './pairing.js';
import { TemplateFit } from './templates.js';

// Host side: machines, offers, telemetry and the network test (contract parts 2-4, 8). Pairing and enrollment tokens
// live in pairing.ts and are re-exported here.

export * from './pairing.js';

// ---- offers ----

export const IncludedQuotas = Type.Object(
  {
    included_disk_gib: Type.Integer({ minimum: 0, maximum: 1_000_000 }),
    included_egress_gib: Type.Integer({ minimum: 0, maximum: 1_000_000 }),
  },
  { additionalProperties: false },
);
export type IncludedQuotas = Static<typeof IncludedQuotas>;

export const MaintenanceWindow = Type.Object(
  { starts_at: Rfc3339Utc, ends_at: Rfc3339Utc, reason: Type.String({ maxLength: 500 }) },
  { additionalProperties: false },
);
export type MaintenanceWindow = Static<typeof MaintenanceWindow>;

export const OFFER_MAINTENANCE_WINDOWS_MAX = 64;

/** Contract part 4: the offer commit body. No other properties, anywhere. */
export const OfferCommitRequest = Type.Object(
  {
    rate_micro_per_hour: MicroAmount,
    included_quotas: IncludedQuotas,
    available_from: Rfc3339Utc,
    available_until: Rfc3339Utc,
    maintenance_windows: Type.Optional(Type.Array(MaintenanceWindow, { maxItems: OFFER_MAINTENANCE_WINDOWS_MAX })),
    /** The version this commit replaces; "0" for the first. */
    expected_version: Int64String,
  },
  { additionalProperties: false },
);
export type OfferCommitRequest = Static<typeof OfferCommitRequest>;

export const OfferCommitted = Type.Object(
  { machine_id: Uuid, offer_id: Uuid, offer_version: Int64String },
  { additionalProperties: false },
);
export type OfferCommitted = Static<typeof OfferCommitted>;

export const OfferReadiness = Type.Union([Type.Literal('ready'), Type.Literal('provisioning'), Type.Literal('unavailable')]);
export type OfferReadiness = Static<typeof OfferReadiness>;

/** A reliability score: uptime over the rolling window minus penalties, 0..1 with four decimals ("0.9876"). */
export const ReliabilityScore = Type.String({ pattern: '^(0\\.[0-9]{4}|1\\.0000)$', maxLength: 6 });
export type ReliabilityScore = Static<typeof ReliabilityScore>;

/** What a renter sees of a machine's reliability (display and evidence only), on offers listed with include=reliability. */
export const OfferReliability = Type.Object(
  {
    score: ReliabilityScore,
    /** The machine's history is shorter than the minimum: the score is provisional. */
    new: Type.Boolean(),
  },
  { additionalProperties: false },
);
export type OfferReliability = Static<typeof OfferReliability>;

/** Contract part 2, OfferSummary. No additional properties; never a host management address. */
export const OfferSummary = Type.Object(
  {
    offer_id: Uuid,
    machine_id: Uuid,
    observed_at: Rfc3339Utc,
    offer_version: Int64String,
    /** The version to name as expected when acting on exactly this offer version. */
    expected_version: Int64String,
    readiness: OfferReadiness,
    total_rate_micro_per_hour: MicroTotal,
    included_quotas: IncludedQuotas,
    available_from: Rfc3339Utc,
    available_until: Rfc3339Utc,
    maintenance_windows: Type.Array(MaintenanceWindow),
    gpu_count: Type.Optional(Type.Integer({ minimum: 1 })),
    model: Type.Optional(Type.String()),
    vram_bytes: Type.Optional(ByteCount),
    ram_bytes: Type.Optional(ByteCount),
    disk_bytes: Type.Optional(ByteCount),
    measured_bandwidth_mbps: Type.Optional(Int64String),
    region: Type.Optional(Type.String()),
    template_compatibility: Type.Optional(Type.Array(Type.String())),
    manifest_hash: Type.Optional(Sha256Hash),
    /**
     * What one job's container may use on this machine (CPU, memory with swap, processes): the machine less the
     * reserve its host keeps for the agent and the system. Absent for an agent older than confinement.
     */
    job_limits: Type.Optional(JobLimits),
    /** TemplateFit: present only when the request named a template. */
    fit: Type.Optional(TemplateFit),
  },
  { additionalProperties: false },
);
export type OfferSummary = Static<typeof OfferSummary>;

/**
 * A machine's hardware verification as offers show it: the score of its latest ok signed self-test receipt with a
 * benchmark (hardwareReceiptScore: the geometric mean of GFLOP/s and GB/s on the benchmark's fixed model) and when
 * that receipt was measured; both null before one. Check it yourself: GET /api/v1/machines/{id}/verification.
 */
export const OfferVerification = Type.Object(
  { score: Nullable(Type.Number({ minimum: 0 })), verified_at: Nullable(Rfc3339Utc) },
  { additionalProperties: false },
);
export type OfferVerification = Static<typeof OfferVerification>;

/**
 * An item of GET /api/v1/offers: exactly an OfferSummary, unless the request asked for more with `include`. The
 * contract's OfferSummary is closed, so a figure it does not name (reliability) is only sent to a client that asks.
 */
export const OfferListItem = Type.Object(
  {
    ...OfferSummary.properties,
    /** With include=reliability: the machine's reliability once the reliability worker scored it (absent before). */
    reliability: Type.Optional(OfferReliability),
    /** With include=verification: the machine's hardware score and verified_at (null before a benchmarked receipt). */
    verification: Type.Optional(OfferVerification),
  },
  { additionalProperties: false },
);
export type OfferListItem = Static<typeof OfferListItem>;

export const OfferListQuery = Type.Object(
  {
    ...PageQuery.properties,
    /** Exact manifest model, e.g. "NVIDIA GeForce RTX 4090". */
    gpu_model: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    /** Machines whose every GPU has at least this much VRAM. A filter, not a size: any value is accepted. */
    min_vram_bytes: Type.Optional(DecimalString),
    /** Machines with at least this many GPUs (0: CPU machines too). */
    min_gpu_count: Type.Optional(Type.Integer({ minimum: 0, maximum: 1024 })),
    region: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    /**
     * On the total rate (platform fee included), the price a renter pays. A filter, not an amount: any value is
     * accepted (one past every rate selects like the largest).
     */
    max_rate_micro_per_hour: Type.Optional(DecimalString),
    /** Offers whose availability covers this instant, outside maintenance. */
    available_at: Type.Optional(Rfc3339Utc),
    /** Adds `fit` to every offer: how the template's VRAM needs meet the machine's measured devices. */
    template_id: Type.Optional(Uuid),
    /** `reliability`: each offer also carries its machine's reliability (not part of the contract's OfferSummary). */
    include: Type.Optional(
      Type.String({
        pattern: '^(reliability|verification)(,(reliability|verification))?$',
        maxLength: 40,
        description: 'reliability, verification, or both comma separated: add each machine’s reliability and/or hardware score',
      }),
    ),
    /** Machines scored at least this, no longer new: a decimal from 0 to 1 with at most four decimals ("0.99"). */
    min_reliability: Type.Optional(
      Type.String({ pattern: '^(0(\\.[0-9]{1,4})?|1(\\.0{1,4})?)$', maxLength: 6, description: '0 to 1, at most 4 decimals' }),
    ),
    /**
     * Machines whose verified hardware score is at least this: a non-negative decimal with at most 3 decimals ("250",
     * "12.5"); machines never scored do not match. Anything else is 422 VALIDATION_FAILED.
     */
    min_score: Type.Optional(Type.String({ pattern: '^[0-9]{1,9}(\\.[0-9]{1,3})?$', maxLength: 13, description: 'a decimal, e.g. 250' })),
  },
  { additionalProperties: false },
);
export type OfferListQuery = Static<typeof OfferListQuery>;

// ---- machines ----

export const MachineLiveness = Type.Union([Type.Literal('online'), Type.Literal('offline')]);
export type MachineLiveness = Static<typeof MachineLiveness>;

export const NetworkFacts = Type.Object(
  {
    download_mbps: Nullable(Type.Number()),
    upload_mbps: Nullable(Type.Number()),
    latency_ms: Nullable(Type.Number()),
    measured_at: Rfc3339Utc,
    /** The agent's reason when the last measurement failed. */
    error: Nullable(Type.String()),
  },
  { additionalProperties: false },
);
export type NetworkFacts = Static<typeof NetworkFacts>;

/** The host's own view of a machine's current offer version. */
export const MachineOffer = Type.Object(
  {
    offer_id: Uuid,
    offer_version: Int64String,
    rate_micro_per_hour: MicroAmount,
    /** What renters see: the rate with the platform fee. */
    total_rate_micro_per_hour: MicroTotal,
    platform_fee_bps: Type.Integer({ minimum: 0 }),
    included_quotas: IncludedQuotas,
    available_from: Rfc3339Utc,
    available_until: Rfc3339Utc,
    maintenance_windows: Type.Array(MaintenanceWindow),
    listed: Type.Boolean(),
    /** True for the offer seeded at go-live, until the host commits its own. */
    seeded: Type.Boolean(),
    readiness: OfferReadiness,
    measured_bandwidth_mbps: Nullable(Int64String),
    committed_at: Rfc3339Utc,
  },
  { additionalProperties: false },
);
export type MachineOffer = Static<typeof MachineOffer>;

/** The host's view of its machine's reliability: the score and what it was computed from. */
export const MachineReliability = Type.Object(
  {
    score: ReliabilityScore,
    /** Its first heartbeat is more recent than the minimum history: never held, not matched by min_reliability. */
    new: Type.Boolean(),
    /** The start of the window scored: the rolling window, clipped to the machine's first heartbeat. */
    window_from: Rfc3339Utc,
    /** Seconds of the window that count (outside published maintenance), and of those the machine was online. */
    counted_s: Int64String,
    online_s: Int64String,
    /** Jobs in the window that failed to start or were lost while running (each costs 0.02). */
    penalized_jobs: Type.Integer({ minimum: 0 }),
    computed_at: Rfc3339Utc,
  },
  { additionalProperties: false },
);
export type MachineReliability = Static<typeof MachineReliability>;

export const ReliabilityHold = Type.Object(
  {
    reason: Type.Literal('below_reliability_floor'),
    message: Type.String(),
    score: ReliabilityScore,
    floor: Type.String(),
    since: Rfc3339Utc,
  },
  { additionalProperties: false },
);
export type ReliabilityHold = Static<typeof ReliabilityHold>;

/** The host's view of its machine's hardware verification: the latest signed self-test receipt's standing. */
export const MachineHardware = Type.Object(
  {
    /** The latest receipt accepted (0: none yet). */
    last_receipt_seq: Type.Integer({ minimum: 0 }),
    /** From the latest ok receipt with a benchmark; null before one. */
    score: Nullable(Type.Number({ minimum: 0 })),
    verified_at: Nullable(Rfc3339Utc),
  },
  { additionalProperties: false },
);
export type MachineHardware = Static<typeof MachineHardware>;

/** Why a machine is unlisted for its hardware: its latest receipt contradicts what it declared. */
export const HardwareHold = Type.Object(
  {
    reason: Type.Literal('hardware_contradicted'),
    message: Type.String(),
    contradictions: Type.Array(Type.Object({ code: Type.String(), message: Type.String() }, { additionalProperties: false })),
    since: Rfc3339Utc,
    /** The support case that told the host. */
    ticket_id: Nullable(Type.String()),
  },
  { additionalProperties: false },
);
export type HardwareHold = Static<typeof HardwareHold>;

/** A job on the host's machine, as its host sees it: no renter identity. */
export const MachineRental = Type.Object(
  {
    job_id: Uuid,
    state: Type.String(),
    /** When the meter started (verified ready), else when the job was reserved. */
    since: Rfc3339Utc,
    metered: Type.Boolean(),
    gpu_count: Type.Integer({ minimum: 0 }),
    /** What the host earns per hour of it: the machine rate agreed at reservation, without the platform fee. */
    earning_rate_micro_per_hour: MicroAmount,
    /** The host's share charged so far. */
    earned_micro: MicroTotal,
  },
  { additionalProperties: false },
);
export type MachineRental = Static<typeof MachineRental>;

export const Machine = Type.Object(
  {
    machine_id: Uuid,
    hostname: Type.String(),
    manifest: MachineManifest,
    manifest_hash: Sha256Hash,
    go_live: Type.Boolean(),
    /** The host lists it as a CPU machine: a machine reporting no GPU is offered only then, shown as one (no gpu_count, no model). */
    cpu_listing: Type.Optional(Type.Boolean()),
    live: MachineLiveState,
    live_error: Nullable(Type.String()),
    liveness: MachineLiveness,
    last_heartbeat_at: Nullable(Rfc3339Utc),
    /** The agent's own verdict in its last heartbeat; null before any. */
    healthy: Nullable(Type.Boolean()),
    problems: Type.Array(Type.String()),
    network: Nullable(NetworkFacts),
    offer: Nullable(MachineOffer),
    created_at: Rfc3339Utc,
    /** The reliability worker's last score of the machine (absent before its first run). */
    reliability: Type.Optional(MachineReliability),
    /** Why the machine is not offered to new rentals for its reliability; null while it is not held. */
    reliability_hold: Type.Optional(Nullable(ReliabilityHold)),
    /** The machine's hardware verification (absent before it has a verification row). */
    hardware: Type.Optional(MachineHardware),
    /** Why the machine is not offered for its hardware (a receipt contradicting its manifest); null while it is not. */
    hardware_hold: Type.Optional(Nullable(HardwareHold)),
    /** GET /api/v1/hosts/machines/{id} only: the machine's rentals now (reserved, starting, running, stopping). */
    current_rentals: Type.Optional(Type.Array(MachineRental)),
  },
  { additionalProperties: false },
);
export type Machine = Static<typeof Machine>;

/** The host turns a machine's go-live on or off. */
export const GoLiveRequest = Type.Object({ go_live: Type.Boolean() }, { additionalProperties: false });
export type GoLiveRequest = Static<typeof GoLiveRequest>;

export const MachineGoLive = Type.Object(
  { machine_id: Uuid, go_live: Type.Boolean(), live: MachineLiveState },
  { additionalProperties: false },
);
export type MachineGoLive = Static<typeof MachineGoLive>;

/** The host lists a machine as a CPU machine, or stops (POST /api/v1/hosts/machines/{id}/cpu-listing). */
export const CpuListingRequest = Type.Object({ cpu_listing: Type.Boolean() }, { additionalProperties: false });
export type CpuListingRequest = Static<typeof CpuListingRequest>;

export const MachineCpuListing = Type.Object(
  { machine_id: Uuid, cpu_listing: Type.Boolean(), gpu_count: Type.Integer({ minimum: 0 }) },
  { additionalProperties: false },
);
export type MachineCpuListing = Static<typeof MachineCpuListing>;

// ---- telemetry ----

export const TELEMETRY_BUCKET_S = 300;
export const TELEMETRY_RETENTION_S = 172_800;
export const TELEMETRY_DEFAULT_WINDOW = '6h';

export const TelemetryQuery = Type.Object(
  { window: Type.Optional(Type.String({ maxLength: 16, description: '<n>s, <n>m or <n>h; default 6h; at most the retention' })) },
  { additionalProperties: false },
);
export type TelemetryQuery = Static<typeof TelemetryQuery>;

export const TelemetrySummary = Type.Object(
  { min: Type.Number(), avg: Type.Number(), max: Type.Number() },
  { additionalProperties: false },
);
export type TelemetrySummary = Static<typeof TelemetrySummary>;

export const TelemetryDevice = Type.Object(
  {
    pci_address: Type.String(),
    temperature_c: Type.Optional(TelemetrySummary),
    utilization_pct: Type.Optional(TelemetrySummary),
    power_watts: Type.Optional(TelemetrySummary),
    fan_pct: Type.Optional(TelemetrySummary),
    memory_used_bytes: Type.Optional(TelemetrySummary),
    unified_memory_used_bytes: Type.Optional(TelemetrySummary),
  },
  { additionalProperties: false },
);
export type TelemetryDevice = Static<typeof TelemetryDevice>;

export const TelemetryHost = Type.Object(
  {
    cpu_utilization_pct: Type.Optional(TelemetrySummary),
    load1: Type.Optional(TelemetrySummary),
    memory_used_bytes: Type.Optional(TelemetrySummary),
    disk_free_bytes: Type.Optional(TelemetrySummary),
    uptime_s: Type.Optional(TelemetrySummary),
  },
  { additionalProperties: false },
);
export type TelemetryHost = Static<typeof TelemetryHost>;

/** Contract part 2, Telemetry bucket. */
export const TelemetryBucket = Type.Object(
  { bucket: Rfc3339Utc, samples: Type.Integer({ minimum: 1 }), devices: Type.Array(TelemetryDevice), host: Type.Optional(TelemetryHost) },
  { additionalProperties: false },
);
export type TelemetryBucket = Static<typeof TelemetryBucket>;

export const TelemetryResponse = Type.Object(
  {
    machine_id: Uuid,
    window_s: Type.Integer({ minimum: 1 }),
    bucket_s: Type.Literal(TELEMETRY_BUCKET_S),
    retention_s: Type.Literal(TELEMETRY_RETENTION_S),
    buckets: Type.Array(TelemetryBucket),
  },
  { additionalProperties: false },
);
export type TelemetryResponse = Static<typeof TelemetryResponse>;

// ---- network test ----

export const NettestQueued = Type.Object(
  { machine_id: Uuid, command_id: Uuid, state: Type.Literal('QUEUED') },
  { additionalProperties: false },
);
export type NettestQueued = Static<typeof NettestQueued>;

/** Largest download or upload the measurement endpoints serve. */
export const NETTEST_MAX_BYTES = 100 * 1024 * 1024;

export const NettestPing = Type.Object({ pong: Type.Literal(true), server_time: Rfc3339Utc }, { additionalProperties: false });
export type NettestPing = Static<typeof NettestPing>;

export const NettestDownloadQuery = Type.Object(
  { bytes: Type.Integer({ minimum: 1, maximum: NETTEST_MAX_BYTES }) },
  { additionalProperties: false },
);
export type NettestDownloadQuery = Static<typeof NettestDownloadQuery>;

export const NettestUploadResult = Type.Object({ bytes: Type.Integer({ minimum: 0 }) }, { additionalProperties: false });
export type NettestUploadResult = Static<typeof NettestUploadResult>;
