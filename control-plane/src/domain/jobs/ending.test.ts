import { describe, expect, it } from 'vitest';
import { DomainError } from '../../errors.js';
import { fundingStopOf, lostMachineOutcome, retrievalWindowSOf, STOP_MESSAGES, stopAfterCharge, stopDecision } from './ending.js';
import { meterStateOf } from './meter.js';
import { CLOSE_REASONS } from './states.js';
import { at, jobRecord } from './testing/job-record.js';

const codeOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (error) {
    return error instanceof DomainError ? error.code : 'not a DomainError';
  }
  return undefined;
};

describe('how jobs end', () => {
  it('has a message for every close reason', () => {
    for (const reason of CLOSE_REASONS) expect(STOP_MESSAGES[reason]).toMatch(/\.$/);
  });

  it('stops stoppable jobs for their owner or an admin, answers repeats, refuses the failed, hides from others', () => {
    const renter = { accountId: 'renter', admin: false };
    const admin = { accountId: 'someone', admin: true };
    expect(stopDecision(jobRecord(), renter)).toEqual({ outcome: 'begin', reason: 'stopped_by_renter' });
    expect(stopDecision(jobRecord({ state: 'RESERVED' }), admin)).toEqual({ outcome: 'begin', reason: 'stopped_by_admin' });
    // An admin stopping their own job is its renter.
    expect(stopDecision(jobRecord(), { accountId: 'renter', admin: true })).toEqual({ outcome: 'begin', reason: 'stopped_by_renter' });
    expect(stopDecision(jobRecord({ state: 'CLEANING' }), renter)).toEqual({ outcome: 'answer', state: 'CLEANING' });
    expect(codeOf(() => stopDecision(jobRecord({ state: 'FAILED' }), renter))).toBe('JOB_NOT_STOPPABLE');
    expect(codeOf(() => stopDecision(jobRecord(), { accountId: 'stranger', admin: false }))).toBe('NOT_FOUND');
  });

  it('gives a retrieval window only to jobs whose meter started', () => {
    expect(retrievalWindowSOf(jobRecord(), 3600)).toBe(3600);
    expect(retrievalWindowSOf(jobRecord({ meterStartedAt: null }), 3600)).toBe(0);
  });

  it('stops a running job when its funding runs out, naming the bound, or when a charge reaches the budget', () => {
    // 0.55 USDC at 1.1 USDC/h: funded for 30 minutes of the 2 h limit.
    expect(fundingStopOf(jobRecord(), at(1_799_999))).toBeNull();
    expect(fundingStopOf(jobRecord(), at(1_800_000))).toBe('budget_exhausted');
    expect(fundingStopOf(jobRecord({ fundedBudgetMicro: 10_000_000n }), at(7_200_000))).toBe('duration_limit');
    expect(fundingStopOf(jobRecord({ fundedBudgetMicro: 10_000_000n, hostCeilingAt: at(60_000) }), at(60_000))).toBe('host_ceiling');
    expect(fundingStopOf(jobRecord({ state: 'STOPPING' }), at(9_999_999))).toBeNull();
    expect(stopAfterCharge(jobRecord({ cumulativeChargeMicro: 550_000n }), at(1000))).toBe('budget_exhausted');
    expect(stopAfterCharge(jobRecord({ cumulativeChargeMicro: 549_999n }), at(1000))).toBeNull();
    expect(stopAfterCharge(jobRecord({ state: 'STOPPING', cumulativeChargeMicro: 550_000n }), at(1000))).toBeNull();
  });

  it('fails waiting jobs and closes stopping ones of a lost machine; leaves the rest', () => {
    expect(lostMachineOutcome('RESERVED')).toEqual({ outcome: 'fail', reason: 'agent_lost' });
    expect(lostMachineOutcome('STARTING')).toEqual({ outcome: 'fail', reason: 'agent_lost' });
    expect(lostMachineOutcome('STOPPING')).toEqual({ outcome: 'close', reason: 'machine_lost' });
    expect(lostMachineOutcome('CLEANING')).toEqual({ outcome: 'close', reason: 'machine_lost' });
    expect(lostMachineOutcome('RUNNING')).toBeNull();
  });

  it('meters RUNNING and STOPPING jobs only', () => {
    expect(meterStateOf(jobRecord()).metering).toBe(true);
    expect(meterStateOf(jobRecord({ state: 'STOPPING' })).metering).toBe(true);
    expect(meterStateOf(jobRecord({ state: 'RECONCILING' })).metering).toBe(false);
    expect(meterStateOf(jobRecord()).durationLimitMs).toBe(7_200_000n);
  });
});
