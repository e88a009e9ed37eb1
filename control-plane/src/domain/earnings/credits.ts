import type { CloseReason } from '../jobs/states.js';
import { chargesFor, type RateSnapshot } from '../metering/charges.js';

// Automatic credits (issue 24 item 3): a job that fails through the host's side gives the renter back what it was
// charged for time after the last verified-healthy point, without anyone asking. Pure rules only.

/**
 * Close reasons that are the host's side: the machine went silent past RECONCILING (`agent_lost`), the machine
 * vanished while the job waited to start (`machine_lost`), the agent reported the running job's container lost
 * (`job_failed`), a GPU assigned to the running job is gone from the machine's telemetry (`gpu_lost`, credited from
 * the last sample that listed all its GPUs: services/jobs/gpu-health.ts). A failed start-time self-test needs no
 * reason here: it fails the job before RUNNING (`launch_failed`), when nothing was charged, so there is nothing to
 * give back. A job the renter stopped, or whose own process exited, is not the host's doing.
 */
export const HOST_FAULT_REASONS: readonly CloseReason[] = ['agent_lost', 'machine_lost', 'job_failed', 'gpu_lost'];

export function isHostFault(reason: CloseReason): boolean {
  return HOST_FAULT_REASONS.includes(reason);
}

export interface CreditFacts {
  rate: RateSnapshot;
  fundedBudgetMicro: bigint;
  /** Runtime the meter accepted in all, and what it was charged for it. */
  acceptedRuntimeMs: bigint;
  chargedHostMicro: bigint;
  chargedFeeMicro: bigint;
  /** The end of the last accepted meter period; null: nothing was metered. */
  meteredUntil: Date | null;
  /**
   * The last verified-healthy point: the machine's last heartbeat before the failure (a heartbeat of a RUNNING job's
   * machine lists the job's container running, or the agent reports it exited or failed). Null: none is known, the
   * meter's start is the point (everything charged comes back).
   */
  healthyAt: Date | null;
}

export interface Credit {
  /** Metered runtime after the healthy point: what is given back. */
  runtimeMs: bigint;
  /** The host's share of its charge: taken from the host's earnings. */
  hostMicro: bigint;
  /** The platform fee on it: given back from the platform's fees. */
  feeMicro: bigint;
  totalMicro: bigint;
}

/**
 * The credit: the charges of the metered runtime that ended after the healthy point. Metered periods follow each
 * other without overlap and end at `meteredUntil`, so at most `meteredUntil - healthyAt` of the accepted runtime lies
 * after the point; the charge for it is the difference of the cumulative charge formula with and without it (so the
 * split between host and fee is the one the charges used, and nothing is given back that was not charged).
 */
export function creditFor(facts: CreditFacts): Credit {
  const accepted = facts.acceptedRuntimeMs;
  let runtimeMs = accepted;
  if (facts.meteredUntil === null) runtimeMs = 0n;
  else if (facts.healthyAt !== null) {
    const after = BigInt(facts.meteredUntil.getTime() - facts.healthyAt.getTime());
    runtimeMs = after <= 0n ? 0n : after < accepted ? after : accepted;
  }
  const before = chargesFor(facts.rate, facts.fundedBudgetMicro, accepted - runtimeMs);
  const hostMicro = positive(facts.chargedHostMicro - before.hostMicro);
  const feeMicro = positive(facts.chargedFeeMicro - before.feeMicro);
  return { runtimeMs, hostMicro, feeMicro, totalMicro: hostMicro + feeMicro };
}

const positive = (n: bigint) => (n > 0n ? n : 0n);
