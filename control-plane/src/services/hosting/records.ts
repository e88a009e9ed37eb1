import type { MachineManifest } from '@ark/shared';
import { fromJson, toBool } from '../../store/db.js';
import type { MachineVerification } from '../../store/hardware-receipts.js';
import type { MachineRow } from '../../store/machines.js';
import type { MachineReliabilityTable } from '../../store/tables/reliability.js';

// The hosting services' records: what routes and views see of a machine and its score, never their rows.

/** An enrolled machine, as its host (or an admin) reads it. Times are the stored RFC 3339 text. */
export interface MachineRecord {
  id: string;
  ownerAccountId: string;
  hostname: string;
  manifest: MachineManifest;
  manifestHash: string;
  goLive: boolean;
  /** The host lists it as a CPU machine: without GPUs it is offered only then. */
  cpuListed: boolean;
  liveState: MachineRow['live_state'];
  liveError: string | null;
  /** The newest heartbeat, a buffered one of this process included. */
  lastHeartbeatAt: string | null;
  /** The agent's own health at its last heartbeat; null before any. */
  healthy: boolean | null;
  problems: string[];
  /** The last network test; null before one was measured. */
  network: {
    downloadMbps: number | null;
    uploadMbps: number | null;
    latencyMs: number | null;
    measuredAt: string;
    error: string | null;
  } | null;
  createdAt: string;
}

export function toMachineRecord(row: MachineRow): MachineRecord {
  return {
    id: row.id,
    ownerAccountId: row.owner_account_id,
    hostname: row.hostname,
    manifest: fromJson<MachineManifest>(row.manifest)!,
    manifestHash: row.manifest_hash,
    goLive: toBool(row.go_live),
    cpuListed: toBool(row.cpu_listed),
    liveState: row.live_state,
    liveError: row.live_error,
    lastHeartbeatAt: row.last_heartbeat_at,
    healthy: row.healthy === null ? null : toBool(row.healthy),
    // The agent's own problems, then the control plane's: why a job's readiness could not be verified.
    problems: [...(fromJson<string[]>(row.problems) ?? []), ...(row.readiness_problem ? [row.readiness_problem] : [])],
    network:
      row.net_measured_at === null
        ? null
        : {
            downloadMbps: row.net_download_mbps,
            uploadMbps: row.net_upload_mbps,
            latencyMs: row.net_latency_ms,
            measuredAt: row.net_measured_at,
            error: row.net_error,
          },
    createdAt: row.created_at,
  };
}

/** The reliability worker's last score of a machine (issue 13). */
export interface MachineReliabilityRecord {
  /** Ten-thousandths, 0..10000. */
  scoreE4: number;
  /** The machine's history is shorter than the minimum: never held, excluded by min_reliability. */
  isNew: boolean;
  /** Under the floor: not offered to new rentals. */
  held: boolean;
  heldSince: string | null;
  windowFrom: string;
  countedS: bigint;
  onlineS: bigint;
  penalizedJobs: bigint;
  computedAt: string;
}

export const toMachineReliabilityRecord = (r: MachineReliabilityTable): MachineReliabilityRecord => ({
  scoreE4: Number(r.score_e4),
  isNew: toBool(r.is_new),
  held: toBool(r.held),
  heldSince: r.held_since,
  windowFrom: r.window_from,
  countedS: r.counted_s,
  onlineS: r.online_s,
  penalizedJobs: r.penalized_jobs,
  computedAt: r.computed_at,
});

/** A machine's hardware verification standing: latest receipt, score, and the unlisting while it lasts. */
export type MachineHardwareRecord = MachineVerification;
