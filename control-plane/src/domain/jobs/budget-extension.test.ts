import { MICRO_AMOUNT_MAX } from '@ark/shared';
import { describe, expect, it } from 'vitest';
import { DomainError } from '../../errors.js';
import { type BudgetExtensionAsk, planBudgetExtension } from './budget-extension.js';
import { at, jobRecord } from './testing/job-record.js';

const ask = (overrides: Partial<BudgetExtensionAsk> = {}): BudgetExtensionAsk => ({
  additionalBudgetMicro: 550_000n,
  newDurationLimitS: 7200n,
  expectedJobVersion: 3n,
  expectedBudgetVersion: 1n,
  ...overrides,
});

const refusal = (fn: () => unknown): { code: string; message: string } | undefined => {
  try {
    fn();
  } catch (error) {
    if (error instanceof DomainError) return { code: error.code, message: error.message };
    throw error;
  }
  return undefined;
};

describe('budget extension', () => {
  it('adds budget, bumps both versions and moves funded_through from the meter start', () => {
    expect(planBudgetExtension(jobRecord(), ask(), at(1000))).toEqual({
      budgetVersion: 2n,
      jobVersion: 4n,
      additionalBudgetMicro: 550_000n,
      fundedBudgetMicro: 1_100_000n,
      previousDurationLimitS: 7200n,
      durationLimitS: 7200n,
      fundedThrough: at(3_600_000),
    });
    // Before readiness funded_through is a projection, not stored.
    expect(planBudgetExtension(jobRecord({ state: 'STARTING', meterStartedAt: null }), ask(), at(1000)).fundedThrough).toBeNull();
  });

  it('refuses in the contract order: state, job version, budget version, shorter limit', () => {
    expect(refusal(() => planBudgetExtension(jobRecord({ state: 'STOPPING' }), ask({ expectedJobVersion: 9n }), at(0)))?.code).toBe(
      'JOB_NOT_EXTENDABLE',
    );
    expect(refusal(() => planBudgetExtension(jobRecord(), ask({ expectedJobVersion: 2n, expectedBudgetVersion: 0n }), at(0)))?.code).toBe(
      'JOB_VERSION_MISMATCH',
    );
    expect(refusal(() => planBudgetExtension(jobRecord(), ask({ expectedBudgetVersion: 0n }), at(0)))?.code).toBe(
      'BUDGET_VERSION_MISMATCH',
    );
    expect(refusal(() => planBudgetExtension(jobRecord(), ask({ newDurationLimitS: 600n }), at(0)))?.code).toBe('DURATION_LIMIT_DECREASE');
  });

  it('refuses an extension that changes nothing, naming the field, but takes a longer limit alone', () => {
    expect(refusal(() => planBudgetExtension(jobRecord(), ask({ additionalBudgetMicro: 0n }), at(0)))).toEqual({
      code: 'VALIDATION_FAILED',
      message: "body/additional_budget_micro must be greater than 0 unless new_duration_limit_s is longer than the job's 7200 s",
    });
    const longer = planBudgetExtension(jobRecord(), ask({ additionalBudgetMicro: 0n, newDurationLimitS: 9000n }), at(0));
    expect(longer).toMatchObject({ budgetVersion: 2n, fundedBudgetMicro: 550_000n, durationLimitS: 9000n });
  });

  it('never passes the host ceiling nor the largest amount', () => {
    const ceiling = jobRecord({ hostCeilingAt: at(7_200_000) });
    expect(refusal(() => planBudgetExtension(ceiling, ask({ newDurationLimitS: 7201n }), at(0)))?.code).toBe('HOST_CEILING_EXCEEDED');
    expect(planBudgetExtension(ceiling, ask({ newDurationLimitS: 7200n }), at(0)).durationLimitS).toBe(7200n);
    const full = jobRecord({ fundedBudgetMicro: MICRO_AMOUNT_MAX });
    expect(refusal(() => planBudgetExtension(full, ask({ additionalBudgetMicro: 1n }), at(0)))?.code).toBe('BUDGET_LIMIT_EXCEEDED');
  });
});
