import { DomainError } from '../../errors.js';
import { type RateSnapshot, totalRateOf } from '../metering/charges.js';
import { OCCUPYING_STATES } from './states.js';

// The spend-rate cap (issue 10 item 5): an account-wide ceiling on the summed total hourly rate (machine rate plus
// platform fee) of its jobs that may still spend money. It stops a runaway client (an AI agent in a loop) from renting
// a hundred rigs; it never stops a job that already runs. Pure: the store reads the rows, the services lock.

/** Jobs whose rate counts against the cap: from RESERVED until the machine confirms the stop (the meter may run). */
export const COMMITTING_STATES = OCCUPYING_STATES;

export interface SpendCapSetting {
  /** The account's own cap; null: it follows the operator's default. */
  ownCapMicroPerHour: bigint | null;
  defaultCapMicroPerHour: bigint;
}

export interface SpendCapStanding {
  capMicroPerHour: bigint;
  defaultCapMicroPerHour: bigint;
  isDefault: boolean;
  committedMicroPerHour: bigint;
  /** cap - committed, never below 0: the largest total rate one more job may have. */
  availableMicroPerHour: bigint;
}

export const effectiveCapOf = (setting: SpendCapSetting): bigint => setting.ownCapMicroPerHour ?? setting.defaultCapMicroPerHour;

/** The summed total hourly rate of the given jobs (each one's snapshotted rate, fee included). */
export function committedRateOf(jobs: readonly RateSnapshot[]): bigint {
  let sum = 0n;
  for (const job of jobs) sum += totalRateOf(job);
  return sum;
}

export function standingOf(setting: SpendCapSetting, committedMicroPerHour: bigint): SpendCapStanding {
  const cap = effectiveCapOf(setting);
  return {
    capMicroPerHour: cap,
    defaultCapMicroPerHour: setting.defaultCapMicroPerHour,
    isDefault: setting.ownCapMicroPerHour === null,
    committedMicroPerHour: committedMicroPerHour,
    availableMicroPerHour: cap > committedMicroPerHour ? cap - committedMicroPerHour : 0n,
  };
}

const usdc = (micro: bigint): string => {
  const whole = micro / 1_000_000n;
  const fraction = (micro % 1_000_000n).toString().padStart(6, '0').replace(/0+$/, '');
  return fraction ? `${whole}.${fraction}` : `${whole}`;
};

/** SPEND_RATE_CAP_EXCEEDED unless a job at `jobTotalRate` fits under the cap beside what is committed. */
export function assertWithinSpendCap(standing: SpendCapStanding, jobTotalRateMicroPerHour: bigint): void {
  if (standing.committedMicroPerHour + jobTotalRateMicroPerHour <= standing.capMicroPerHour) return;
  throw new DomainError(
    'SPEND_RATE_CAP_EXCEEDED',
    `This job's total rate is ${jobTotalRateMicroPerHour} micro-USDC per hour (${usdc(jobTotalRateMicroPerHour)} USDC/h); ` +
      `the account's jobs already commit ${standing.committedMicroPerHour} (${usdc(standing.committedMicroPerHour)} USDC/h) ` +
      `against a spend-rate cap of ${standing.capMicroPerHour} (${usdc(standing.capMicroPerHour)} USDC/h). ` +
      'Stop a job, or raise the cap (PUT /api/v1/account/spend-cap, with a fresh step-up).',
  );
}

/** Whether moving from `current` to `next` raises the effective cap (which needs a fresh step-up). */
export function isRaise(current: SpendCapSetting, nextOwnCapMicroPerHour: bigint | null): boolean {
  return effectiveCapOf({ ...current, ownCapMicroPerHour: nextOwnCapMicroPerHour }) > effectiveCapOf(current);
}
