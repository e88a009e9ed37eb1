import { MICRO_AMOUNT_MAX } from '@ark/shared/limits';
import { iso } from '../../clock.js';
import { DomainError } from '../../errors.js';
import { fundedThrough } from '../metering/charges.js';
import { fundingOf, type JobRecord } from './job.js';
import { EXTENDABLE_STATES } from './states.js';

// Budget extension (contract part 3): compare-and-set on the job's and the budget's versions, more budget or a
// longer duration limit, never past the host-availability ceiling snapshotted at reservation. Pure.

export interface BudgetExtensionAsk {
  additionalBudgetMicro: bigint;
  newDurationLimitS: bigint;
  expectedJobVersion: bigint;
  expectedBudgetVersion: bigint;
}

/** What an accepted extension writes: one amendment, the job's new funding and versions. */
export interface BudgetAmendment {
  budgetVersion: bigint;
  jobVersion: bigint;
  additionalBudgetMicro: bigint;
  fundedBudgetMicro: bigint;
  previousDurationLimitS: bigint;
  durationLimitS: bigint;
  /** The job's new funded_through; null before its meter started (it is projected from now then). */
  fundedThrough: Date | null;
}

/**
 * Checks an extension of a job the caller owns, in the contract's order, and says what it writes. An extension
 * must change something: a zero addition is refused (422, naming the field) unless the duration limit grows.
 */
export function planBudgetExtension(job: JobRecord, ask: BudgetExtensionAsk, now: Date): BudgetAmendment {
  if (!EXTENDABLE_STATES.includes(job.state)) {
    throw new DomainError(
      'JOB_NOT_EXTENDABLE',
      `The job is ${job.state}; budgets can be extended while it is RESERVED, STARTING or RUNNING.`,
    );
  }
  if (ask.expectedJobVersion !== job.jobVersion) {
    throw new DomainError('JOB_VERSION_MISMATCH', `The job is at version ${job.jobVersion}, not ${ask.expectedJobVersion}.`);
  }
  if (ask.expectedBudgetVersion !== job.budgetVersion) {
    throw new DomainError('BUDGET_VERSION_MISMATCH', `The budget is at version ${job.budgetVersion}, not ${ask.expectedBudgetVersion}.`);
  }
  if (ask.newDurationLimitS < job.durationLimitS) {
    throw new DomainError('DURATION_LIMIT_DECREASE', `The duration limit is ${job.durationLimitS} s; the new one must not be shorter.`);
  }
  if (ask.additionalBudgetMicro === 0n && ask.newDurationLimitS === job.durationLimitS) {
    throw new DomainError(
      'VALIDATION_FAILED',
      `body/additional_budget_micro must be greater than 0 unless new_duration_limit_s is longer than the job's ${job.durationLimitS} s`,
    );
  }
  const start = job.meterStartedAt ?? now;
  if (start.getTime() + Number(ask.newDurationLimitS) * 1000 > job.hostCeilingAt.getTime()) {
    throw new DomainError(
      'HOST_CEILING_EXCEEDED',
      `The machine is available until ${iso(job.hostCeilingAt)}; the new duration limit would pass it.`,
    );
  }
  const fundedBudgetMicro = job.fundedBudgetMicro + ask.additionalBudgetMicro;
  // The funded budget is one amount (a MicroAmount) however many extensions add to it.
  if (fundedBudgetMicro > MICRO_AMOUNT_MAX) throw new DomainError('BUDGET_LIMIT_EXCEEDED');
  const funding = fundingOf({ ...job, fundedBudgetMicro, durationLimitS: ask.newDurationLimitS });
  return {
    budgetVersion: job.budgetVersion + 1n,
    jobVersion: job.jobVersion + 1n,
    additionalBudgetMicro: ask.additionalBudgetMicro,
    fundedBudgetMicro,
    previousDurationLimitS: job.durationLimitS,
    durationLimitS: ask.newDurationLimitS,
    fundedThrough: job.meterStartedAt !== null ? fundedThrough(funding, job.meterStartedAt).at : null,
  };
}
