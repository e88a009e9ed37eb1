import type { MachineLiveness, MachineLiveState, OfferReadiness } from '@ark/shared';

// The go-live state of a machine and its liveness. The contract names the values (waiting, live, failed, off;
// ready, provisioning, unavailable) and leaves the transitions to us:
//
//   enrolled with go_live      -> waiting
//   enrolled without go_live   -> off
//   waiting --healthy heartbeat--> live        (the seeded offer is listed, unverified)
//   waiting --unhealthy heartbeat--> failed    (error = the agent's problems)
//   failed  --healthy heartbeat--> live        (the host fixed it; the error is cleared)
//   live    --any heartbeat--> live            (health afterwards shows in readiness, not in go-live)
//   any     --host turns go-live off--> off
//
// Liveness is computed when read: online while the last heartbeat is within 3 heartbeat intervals.

export const LIVENESS_GRACE_HEARTBEATS = 3;

export interface GoLiveUpdate {
  live: MachineLiveState;
  error: string | null;
  /** The machine went live with this heartbeat: list its offer. */
  wentLive: boolean;
}

export function initialLiveState(goLive: boolean): MachineLiveState {
  return goLive ? 'waiting' : 'off';
}

export function onHeartbeat(
  current: MachineLiveState,
  currentError: string | null,
  heartbeat: { healthy: boolean; problems: string[] },
): GoLiveUpdate {
  switch (current) {
    case 'off':
      return { live: 'off', error: currentError, wentLive: false };
    case 'live':
      return { live: 'live', error: null, wentLive: false };
    case 'waiting':
    case 'failed':
      if (heartbeat.healthy) return { live: 'live', error: null, wentLive: true };
      return { live: 'failed', error: describeProblems(heartbeat.problems), wentLive: false };
  }
}

export function describeProblems(problems: string[]): string {
  const text = problems.filter((p) => p.trim() !== '').join('; ');
  return (text || 'the agent reported itself unhealthy').slice(0, 1000);
}

export function livenessAt(lastHeartbeatAt: Date | null, now: Date, heartbeatIntervalMs: number): MachineLiveness {
  if (lastHeartbeatAt === null) return 'offline';
  return now.getTime() - lastHeartbeatAt.getTime() <= LIVENESS_GRACE_HEARTBEATS * heartbeatIntervalMs ? 'online' : 'offline';
}

/**
 * What a renter is told about an offer's machine: ready when live, online and healthy at its last heartbeat;
 * provisioning while waiting for its first healthy heartbeat; unavailable otherwise.
 */
export function readinessOf(live: MachineLiveState, liveness: MachineLiveness, healthy: boolean | null): OfferReadiness {
  if (live === 'live') return liveness === 'online' && healthy !== false ? 'ready' : 'unavailable';
  if (live === 'waiting') return 'provisioning';
  return 'unavailable';
}

/** What the machine row says now, as the heartbeat rules need it. */
export interface MachineLiveFacts {
  /** Whether any heartbeat was recorded before. */
  seenBefore: boolean;
  live: MachineLiveState;
  error: string | null;
  healthy: boolean | null;
  problems: readonly string[];
}

/**
 * A heartbeat that changes nothing but last-seen: the machine was seen before, its go-live state stays put, and
 * health and problems are the same. Those are written behind, in bulk (store/heartbeats.ts); any other is applied at
 * once.
 */
export function changesOnlyLastSeen(
  machine: MachineLiveFacts,
  heartbeat: { healthy: boolean; problems: readonly string[] },
  next: GoLiveUpdate,
): boolean {
  return (
    machine.seenBefore &&
    !next.wentLive &&
    next.live === machine.live &&
    next.error === machine.error &&
    machine.healthy === heartbeat.healthy &&
    machine.problems.length === heartbeat.problems.length &&
    machine.problems.every((p, i) => p === heartbeat.problems[i])
  );
}
