import type { MachineManifest, PairingState, PairingSummary } from '@ark/shared';

// Pairing by one-time code (contract part 3, "Pairing states"; RFC 8628 device flow).

/** A code lives about 15 minutes. */
export const PAIRING_TTL_MS = 15 * 60_000;
/** Seconds the installer waits between polls (RFC 8628 `interval`). */
export const PAIRING_POLL_INTERVAL_S = 5;
/** Enrollment tokens, from a poll or created directly: single use, 10 minutes. */
export const ENROLLMENT_TOKEN_TTL_MS = 10 * 60_000;
/** Wrong codes allowed per hour, per account and per source address (contract part 8). */
export const PAIRING_MISS_LIMIT = 10;
export const PAIRING_MISS_WINDOW_MS = 3_600_000;
/** The first day of hosting, during which the new-host cap applies. */
export const NEW_HOST_WINDOW_MS = 24 * 3_600_000;

/** When a pairing started at `now` expires. */
export const pairingExpiry = (now: Date): Date => new Date(now.getTime() + PAIRING_TTL_MS);
/** When an enrollment token issued at `now` expires. */
export const enrollmentTokenExpiry = (now: Date): Date => new Date(now.getTime() + ENROLLMENT_TOKEN_TTL_MS);
/** Wrong codes since this moment count against the limit; older ones are forgotten. */
export const missWindowStart = (now: Date): Date => new Date(now.getTime() - PAIRING_MISS_WINDOW_MS);
/** A pending pairing is kept a day past its expiry (a late poll still reads `expired`), then purged. */
export const PAIRING_KEPT_AFTER_EXPIRY_MS = 86_400_000;
export const pairingPurgeBefore = (now: Date): Date => new Date(now.getTime() - PAIRING_KEPT_AFTER_EXPIRY_MS);

/** Stored states; `expired` is never stored: a pending pairing past its expiry reads as expired. */
export type StoredPairingState = 'pending' | 'approved' | 'consumed';

export function pairingStateAt(stored: StoredPairingState, expiresAt: Date, now: Date): PairingState {
  if (stored === 'pending' && now.getTime() >= expiresAt.getTime()) return 'expired';
  return stored;
}

/** What the approver sees of the machine: the agent's own manifest, summarised. */
export function pairingSummary(manifest: MachineManifest | null, requestedAt: Date): PairingSummary {
  const models = manifest ? [...new Set(manifest.gpus.map((g) => g.model))] : [];
  return {
    hostname: manifest?.hostname ?? null,
    gpu_count: manifest?.gpus.length ?? 0,
    gpu_models: models,
    agent_version: manifest?.agent_version ?? null,
    requested_at: requestedAt.toISOString(),
  };
}
