// The cluster test's faults on a seeded schedule: the same seed gives the same faults, in the same order, on the same
// replicas, after the same pauses (what the system does in between still depends on timing).
import type { Cluster } from './cluster.js';

export type FaultKind = 'kill' | 'pause' | 'postgres-restart' | 'agent-cut' | 'kill-mid-request';
export const FAULT_KINDS: readonly FaultKind[] = ['kill', 'pause', 'postgres-restart', 'agent-cut', 'kill-mid-request'];

/** mulberry32: a small seeded PRNG, floats in [0, 1). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface PlannedFault {
  kind: FaultKind;
  /** Replica index (0-based) for the replica faults. */
  replica: number;
  /** Pause before the fault. */
  afterMs: number;
  /** How long a replica stays down or stopped, or the database stays down. */
  durationMs: number;
}

export interface FaultTimings {
  /** A SIGSTOP lasts longer than this: the channel's and the leases' timeouts. */
  pauseMs: number;
  gapMs: [number, number];
}

/** `rounds` rounds, each every fault kind once in a seeded order. */
export function planFaults(seed: number, rounds: number, timings: FaultTimings): PlannedFault[] {
  const random = prng(seed);
  const plan: PlannedFault[] = [];
  for (let round = 0; round < rounds; round++) {
    const kinds = [...FAULT_KINDS];
    for (let i = kinds.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [kinds[i], kinds[j]] = [kinds[j] as FaultKind, kinds[i] as FaultKind];
    }
    for (const kind of kinds) {
      const [low, high] = timings.gapMs;
      plan.push({
        kind,
        replica: Math.floor(random() * 3),
        afterMs: Math.round(low + random() * (high - low)),
        durationMs: kind === 'pause' ? timings.pauseMs + Math.round(random() * 2_000) : Math.round(500 + random() * 1_500),
      });
    }
  }
  return plan;
}

export interface InjectedFault extends PlannedFault {
  at: number;
  took: number;
  note: string;
}

/**
 * Runs one fault. kill-mid-request: requests that take the store are sent to the load balancer in a burst and the
 * replica is killed while some are in flight to it (HAProxy's round robin gives it a third of them).
 */
export async function injectFault(cluster: Cluster, fault: PlannedFault, midRequestLoad: () => Promise<unknown>): Promise<InjectedFault> {
  const at = Date.now();
  const replica = cluster.replicas[fault.replica];
  if (replica === undefined) throw new Error(`no replica ${fault.replica}`);
  let note = '';
  switch (fault.kind) {
    case 'kill':
      await cluster.killReplica(replica, fault.durationMs);
      note = `replica ${replica.index + 1} kill -9, down ${fault.durationMs} ms`;
      break;
    case 'pause':
      await cluster.pauseReplica(replica, fault.durationMs);
      note = `replica ${replica.index + 1} SIGSTOP for ${fault.durationMs} ms`;
      break;
    case 'postgres-restart':
      await cluster.postgres.restart(fault.durationMs);
      note = `PostgreSQL down ${fault.durationMs} ms`;
      break;
    case 'agent-cut':
      note = `${cluster.cutAgentConnections()} agent connections cut`;
      break;
    case 'kill-mid-request': {
      const burst = Array.from({ length: 12 }, () => midRequestLoad());
      await new Promise((resolve) => setTimeout(resolve, 15));
      await cluster.killReplica(replica, fault.durationMs);
      await Promise.allSettled(burst);
      note = `replica ${replica.index + 1} kill -9 under a burst of 12 requests`;
      break;
    }
  }
  return { ...fault, at, took: Date.now() - at, note };
}
