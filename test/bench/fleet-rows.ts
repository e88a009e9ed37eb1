import { createHash } from 'node:crypto';

// Rows of an enrolled, live, listed machine, seeded straight into the store by the fleet-size benches (market,
// reliability, agents): its consumed enrollment token, the machine and its offer (current version 2). Versions, listings
// and history stay each bench's own.

export interface FleetMachine {
  index: number;
  machineId: string;
  tokenId: string;
  offerId: string;
  hostAccountId: string;
  gpuModel: string;
  gpuCount: number;
  /** When it was enrolled (RFC 3339). */
  created: string;
  /** Its last heartbeat (RFC 3339). */
  lastHeartbeatAt: string;
  /** The key it signs channel frames with (base64 ed25519); a placeholder for machines that never connect. */
  publicKey?: string;
}

export function fleetMachineRows(m: FleetMachine): {
  token: Record<string, unknown>;
  machine: Record<string, unknown>;
  offer: Record<string, unknown>;
} {
  return {
    token: {
      id: m.tokenId,
      token_hash: createHash('sha256').update(m.tokenId).digest('hex'),
      account_id: m.hostAccountId,
      pairing_id: null,
      go_live: 1n,
      created_at: m.created,
      expires_at: m.created,
      consumed_at: m.created,
      machine_id: m.machineId,
    },
    machine: {
      id: m.machineId,
      owner_account_id: m.hostAccountId,
      public_key: m.publicKey ?? 'AAAA',
      manifest: '{}',
      manifest_hash: `sha256:${'0'.repeat(64)}`,
      hostname: `rig-${m.index}`,
      gpu_count: BigInt(m.gpuCount),
      gpu_model: m.gpuModel,
      vram_bytes: 25_757_220_864n,
      ram_bytes: 137_438_953_472n,
      disk_bytes: 2_000_398_934_016n,
      region: 'eu-west',
      go_live: 1n,
      live_state: 'live',
      live_error: null,
      last_heartbeat_at: m.lastHeartbeatAt,
      healthy: 1n,
      problems: '[]',
      uptime_s: 100n,
      net_download_mbps: null,
      net_upload_mbps: null,
      net_latency_ms: null,
      net_measured_at: null,
      net_error: null,
      enrollment_token_id: m.tokenId,
      pairing_id: null,
      created_at: m.created,
      updated_at: m.created,
    },
    offer: {
      id: m.offerId,
      machine_id: m.machineId,
      current_version: 2n,
      listed: 1n,
      seeded: 0n,
      measured_bandwidth_mbps: null,
      created_at: m.created,
      updated_at: m.created,
    },
  };
}
