// Hosting: host profiles, pairings, enrollment tokens, machines, offers and telemetry.
// Timestamps are ISO text, booleans 0/1 (bigint), integers bigint, JSON text, measurements double.

import type { GPU_FIELDS, HOST_FIELDS } from '../../domain/telemetry/rollup.js';

export interface HostProfilesTable {
  account_id: string;
  /** Turned on at first use (approving a pairing or creating an enrollment token). */
  hosting_enabled: bigint;
  /** Set by an admin: no new machines, no offer commits. */
  hosting_blocked: bigint;
  /** First use; the new-host cap applies for 24 hours from here. */
  hosting_started_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface PairingsTable {
  id: string;
  /** sha256 hex of the poll secret. */
  poll_secret_hash: string;
  /** Canonical form: 8 characters, no dash. */
  user_code: string;
  state: 'pending' | 'approved' | 'consumed';
  /** The agent's manifest (JSON) when it sent one. */
  manifest: string | null;
  source_address: string;
  created_at: string;
  expires_at: string;
  go_live: bigint;
  approver_account_id: string | null;
  approver_credential_kind: 'session' | 'api-key' | null;
  approver_credential_id: string | null;
  approved_at: string | null;
  consumed_at: string | null;
  enrollment_token_id: string | null;
}

export interface PairingMissesTable {
  id: string;
  /** `account:<id>` or `address:<ip>`. */
  subject: string;
  at: string;
}

export interface EnrollmentTokensTable {
  id: string;
  /** sha256 hex of the token. */
  token_hash: string;
  account_id: string;
  pairing_id: string | null;
  go_live: bigint;
  created_at: string;
  expires_at: string;
  consumed_at: string | null;
  machine_id: string | null;
}

export interface MachinesTable {
  id: string;
  owner_account_id: string;
  /** base64 ed25519 public key (32 bytes). */
  public_key: string;
  manifest: string;
  manifest_hash: string;
  hostname: string;
  gpu_count: bigint;
  gpu_model: string | null;
  /** Smallest per-GPU VRAM. */
  vram_bytes: bigint | null;
  ram_bytes: bigint;
  disk_bytes: bigint;
  region: string | null;
  go_live: bigint;
  /** 1: the host lists this machine as a CPU machine; one without GPUs is offered only then. */
  cpu_listed: bigint;
  live_state: 'waiting' | 'live' | 'failed' | 'off';
  live_error: string | null;
  last_heartbeat_at: string | null;
  healthy: bigint | null;
  /** JSON array of the agent's problems at its last heartbeat. */
  problems: string;
  /** Why the last readiness verification of a job on this machine failed (shown as a problem); null once one passes. */
  readiness_problem: string | null;
  uptime_s: bigint | null;
  net_download_mbps: number | null;
  net_upload_mbps: number | null;
  net_latency_ms: number | null;
  net_measured_at: string | null;
  net_error: string | null;
  enrollment_token_id: string;
  pairing_id: string | null;
  created_at: string;
  updated_at: string;
}

export interface OffersTable {
  id: string;
  machine_id: string;
  /** The version renters see; moved by compare-and-set only. */
  current_version: bigint;
  listed: bigint;
  /** The current version is the one seeded at go-live. */
  seeded: bigint;
  measured_bandwidth_mbps: bigint | null;
  created_at: string;
  updated_at: string;
}

/** Immutable: one row per committed version. */
export interface OfferVersionsTable {
  offer_id: string;
  version: bigint;
  rate_micro_per_hour: bigint;
  included_disk_gib: bigint;
  included_egress_gib: bigint;
  available_from: string;
  available_until: string;
  created_at: string;
  created_by_account_id: string | null;
}

export interface OfferMaintenanceWindowsTable {
  offer_id: string;
  version: bigint;
  position: bigint;
  starts_at: string;
  ends_at: string;
  reason: string;
}

export interface TelemetryBucketsTable {
  machine_id: string;
  bucket_start: string;
  samples: bigint;
}

/** The measured fields a device row keeps columns for: the GPUs' and the host's (domain/telemetry/rollup.ts). */
export type TelemetryStoredField = (typeof GPU_FIELDS)[number] | (typeof HOST_FIELDS)[number];

/**
 * One device's roll-up in one bucket: for each field, min, max, sum and count (all null where the field was never
 * measured in the bucket), and the samples the device appeared in.
 */
export type TelemetryDeviceStatsTable = {
  machine_id: string;
  bucket_start: string;
  /** PCI address, or '#host' for the host's readings. */
  device: string;
  /** Samples in which the device appeared, measured or not (the roll-up's presence field); null for the host. */
  seen_count: bigint | null;
} & { [F in TelemetryStoredField as `${F}_min` | `${F}_max` | `${F}_sum`]: number | null } & {
  [F in TelemetryStoredField as `${F}_count`]: bigint | null;
};

export interface HostsTables {
  host_profiles: HostProfilesTable;
  pairings: PairingsTable;
  pairing_misses: PairingMissesTable;
  enrollment_tokens: EnrollmentTokensTable;
  machines: MachinesTable;
  offers: OffersTable;
  offer_versions: OfferVersionsTable;
  offer_maintenance_windows: OfferMaintenanceWindowsTable;
  telemetry_buckets: TelemetryBucketsTable;
  telemetry_device_stats: TelemetryDeviceStatsTable;
}
