import type { JobState } from '@ark/shared';

// Renting: quotes, jobs, their events and budget amendments. Timestamps ISO text, integers bigint, JSON text.

export interface QuotesTable {
  id: string;
  account_id: string;
  machine_id: string;
  offer_id: string;
  offer_version: bigint;
  gpu_count: bigint;
  machine_rate_micro_per_hour: bigint;
  platform_fee_bps: bigint;
  budget_micro: bigint;
  duration_limit_s: bigint;
  estimated_total_micro: bigint;
  manifest_hash: string;
  image_digest: string;
  template_id: string | null;
  terms_version: string;
  included_disk_gib: bigint;
  included_egress_gib: bigint;
  /** min(availability end, next maintenance start) when quoted. */
  host_ceiling_at: string;
  created_at: string;
  expires_at: string;
  /** Set once, by the reservation that consumed it. */
  used_at: string | null;
  job_id: string | null;
}

export interface JobsTable {
  id: string;
  /** The renter. */
  account_id: string;
  machine_id: string;
  /** The machine's owner at reservation: whose payable the charges go to. */
  host_account_id: string;
  quote_id: string;
  state: JobState;
  /** Bumped whenever the job is (re)bound to an agent session; older fences are refused. */
  fence: bigint;
  /** Optimistic version: state, funding and binding changes bump it; metering progress does not. */
  job_version: bigint;
  budget_version: bigint;
  machine_rate_micro_per_hour: bigint;
  platform_fee_bps: bigint;
  funded_budget_micro: bigint;
  duration_limit_s: bigint;
  host_ceiling_at: string;
  /** Stored for the sweeps once the meter runs (null before); the view recomputes it. */
  funded_through: string | null;
  gpu_count: bigint;
  gpu_model: string | null;
  /** JSON array of PCI addresses. */
  gpu_pci_addresses: string;
  image_digest: string;
  template_id: string | null;
  template_name: string | null;
  template_kind: string | null;
  /** The launch_job body without its fence, AES-256-GCM sealed (it holds the renter's variables). */
  launch_sealed: string;
  /** The renter's variables, sealed: redacted from events. */
  env_sealed: string;
  /** Model-kind jobs: the engine key, sealed; shown only through the access endpoint. */
  engine_key_sealed: string | null;
  accepted_runtime_ms: bigint;
  cumulative_charge_micro: bigint;
  charged_host_micro: bigint;
  charged_fee_micro: bigint;
  meter_started_at: string | null;
  meter_floor_at: string | null;
  last_meter_receipt_at: string | null;
  /** Highest meter_seq accepted under the current fence. */
  meter_seq: bigint;
  metered_until: string | null;
  /** JSON of the agent's access report (ssh port, fingerprint, ports). */
  access: string | null;
  pull_progress_pct: bigint | null;
  stop_requested_at: string | null;
  stop_reason: string | null;
  close_reason: string | null;
  stopped_at: string | null;
  retrieval_until: string | null;
  closed_at: string | null;
  state_changed_at: string;
  /** Last event seq written for this job. */
  event_seq: bigint;
  created_at: string;
  updated_at: string;
}

export interface JobEventsTable {
  job_id: string;
  seq: bigint;
  at: string;
  kind: string;
  message: string;
  /** JSON object. */
  data: string;
}

/** Immutable: one row per committed budget extension (triggers refuse UPDATE and DELETE). */
export interface JobBudgetAmendmentsTable {
  id: string;
  job_id: string;
  account_id: string;
  /** The budget_version this amendment created. */
  budget_version: bigint;
  additional_budget_micro: bigint;
  funded_budget_micro: bigint;
  previous_duration_limit_s: bigint;
  new_duration_limit_s: bigint;
  created_at: string;
}

/** A job the agent reported ready, waiting in STARTING for the control plane's verification (migration 0022). */
export interface JobReadinessTable {
  job_id: string;
  machine_id: string;
  fence: bigint;
  reported_at: string;
  /** JSON object: the agent's readiness evidence. */
  evidence: string;
  attempts: bigint;
  next_attempt_at: string;
  claimed_by: string | null;
  claimed_until: string | null;
  last_error: string | null;
  created_at: string;
}

/** The last telemetry sample in which all of a RUNNING job's GPUs were present (a GPU lost per telemetry). */
export interface JobGpuHealthTable {
  job_id: string;
  healthy_at: string;
}

export interface JobsTables {
  job_gpu_health: JobGpuHealthTable;
  job_readiness: JobReadinessTable;
  quotes: QuotesTable;
  jobs: JobsTable;
  job_events: JobEventsTable;
  job_budget_amendments: JobBudgetAmendmentsTable;
}
