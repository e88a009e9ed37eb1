import { totalRateMicroPerHour } from '../pricing.js';

// Metered charges (DESIGN.md "Pricing and metering"). Pure and bigint: money and metered time never pass
// through a float.

export const MS_PER_HOUR = 3_600_000n;

/** The rate a job snapshotted from its quote at reservation; never recomputed from current offers. */
export interface RateSnapshot {
  machineRateMicroPerHour: bigint;
  platformFeeBps: bigint;
}

export function totalRateOf(rate: RateSnapshot): bigint {
  return totalRateMicroPerHour(rate.machineRateMicroPerHour, rate.platformFeeBps);
}

export interface Charges {
  /** min(funded budget, floor(total rate * runtime / 1 h)): what the renter has been charged in all. */
  cumulativeMicro: bigint;
  /** The machine-rate share of the cumulative charge, owed to the host. */
  hostMicro: bigint;
  /** The platform-fee share: cumulativeMicro - hostMicro. */
  feeMicro: bigint;
}

/**
 * The charges after `acceptedRuntimeMs` of accepted runtime under `fundedBudgetMicro`.
 *
 * The cumulative charge is the DESIGN formula. It is split by the machine rate's share of the total rate:
 * host = floor(cumulative * machine rate / total rate), fee = the rest. Splitting the cumulative charge (rather
 * than flooring machine rate * runtime separately) is what keeps both shares monotone: each micro of cumulative
 * charge moves exactly one share up by one, so the postings are always non-negative deltas and host + fee is the
 * cumulative charge exactly. Uncapped, the host share equals floor(machine rate * runtime / 1 h) or is one micro
 * below it; under the budget cap it stays at its share of the budget instead of eating the fee.
 */
export function chargesFor(rate: RateSnapshot, fundedBudgetMicro: bigint, acceptedRuntimeMs: bigint): Charges {
  if (acceptedRuntimeMs < 0n) throw new RangeError('runtime must not be negative');
  if (fundedBudgetMicro < 0n) throw new RangeError('a budget must not be negative');
  const total = totalRateOf(rate);
  const uncapped = (total * acceptedRuntimeMs) / MS_PER_HOUR;
  const cumulativeMicro = uncapped < fundedBudgetMicro ? uncapped : fundedBudgetMicro;
  const hostMicro = total === 0n ? 0n : (cumulativeMicro * rate.machineRateMicroPerHour) / total;
  return { cumulativeMicro, hostMicro, feeMicro: cumulativeMicro - hostMicro };
}

/** What to post now: the new charges minus what was posted before. Both deltas are non-negative by construction. */
export function chargeDelta(posted: { hostMicro: bigint; feeMicro: bigint }, next: Charges): { hostMicro: bigint; feeMicro: bigint } {
  const hostMicro = next.hostMicro - posted.hostMicro;
  const feeMicro = next.feeMicro - posted.feeMicro;
  if (hostMicro < 0n || feeMicro < 0n) throw new Error(`metered charges went backwards (host ${hostMicro}, fee ${feeMicro})`);
  return { hostMicro, feeMicro };
}

/** Milliseconds of runtime the budget pays for at the total rate (floor). */
export function fundedRuntimeMs(fundedBudgetMicro: bigint, totalRate: bigint): bigint | null {
  if (totalRate <= 0n) return null;
  return (fundedBudgetMicro * MS_PER_HOUR) / totalRate;
}

export type FundingBound = 'budget' | 'duration_limit' | 'host_ceiling';

export interface FundingInput {
  rate: RateSnapshot;
  fundedBudgetMicro: bigint;
  durationLimitS: bigint;
  hostCeilingAt: Date;
}

/**
 * funded_through = start + floor(funded budget * 1 h / total rate), never past start + duration limit nor the
 * host-availability ceiling. `start` is meter_started_at once the meter runs, and now before (a projection).
 * Returns the instant and which bound decided it.
 */
export function fundedThrough(input: FundingInput, start: Date): { at: Date; bound: FundingBound } {
  const startMs = BigInt(start.getTime());
  const durationMs = input.durationLimitS * 1000n;
  const budgetMs = fundedRuntimeMs(input.fundedBudgetMicro, totalRateOf(input.rate));
  let endMs = startMs + durationMs;
  let bound: FundingBound = 'duration_limit';
  if (budgetMs !== null && startMs + budgetMs < endMs) {
    endMs = startMs + budgetMs;
    bound = 'budget';
  }
  const ceilingMs = BigInt(input.hostCeilingAt.getTime());
  if (ceilingMs < endMs) {
    endMs = ceilingMs;
    bound = 'host_ceiling';
  }
  return { at: new Date(Number(endMs)), bound };
}

/** Informational estimate of a quote: floor(total rate * duration / 3600), fee included. */
export function estimatedTotalMicro(rate: RateSnapshot, durationLimitS: bigint): bigint {
  return (totalRateOf(rate) * durationLimitS) / 3600n;
}
