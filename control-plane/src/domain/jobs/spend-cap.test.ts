import { describe, expect, it } from 'vitest';
import { DomainError } from '../../errors.js';
import { totalRateMicroPerHour } from '../pricing.js';
import { assertWithinSpendCap, COMMITTING_STATES, committedRateOf, isRaise, standingOf } from './spend-cap.js';
import { FINAL_STATES } from './states.js';

const job = (rate: bigint, fee = 1000n) => ({ machineRateMicroPerHour: rate, platformFeeBps: fee });

describe('spend-rate cap', () => {
  it('sums each job’s total rate, fee included and floored per job as it is charged', () => {
    const jobs = [job(500_000n), job(333_333n), job(1n, 2500n)];
    const expected = jobs.reduce((sum, j) => sum + totalRateMicroPerHour(j.machineRateMicroPerHour, j.platformFeeBps), 0n);
    expect(committedRateOf(jobs)).toBe(expected);
    expect(committedRateOf([])).toBe(0n);
  });

  it('counts jobs until the machine confirms the stop, and no ended job', () => {
    expect([...COMMITTING_STATES].sort()).toEqual(['RECONCILING', 'RESERVED', 'RUNNING', 'STARTING', 'STOPPING']);
    for (const state of [...FINAL_STATES, 'STOPPED', 'CLEANING'] as const) expect(COMMITTING_STATES).not.toContain(state);
  });

  it('follows the default until the account sets its own, and never reports a negative room', () => {
    expect(standingOf({ ownCapMicroPerHour: null, defaultCapMicroPerHour: 10n }, 4n)).toEqual({
      capMicroPerHour: 10n,
      defaultCapMicroPerHour: 10n,
      isDefault: true,
      committedMicroPerHour: 4n,
      availableMicroPerHour: 6n,
    });
    const under = standingOf({ ownCapMicroPerHour: 3n, defaultCapMicroPerHour: 10n }, 4n);
    expect(under).toMatchObject({ capMicroPerHour: 3n, isDefault: false, availableMicroPerHour: 0n });
  });

  it('admits a job that fits exactly and refuses one micro more, naming the cap, the committed rate and the job’s rate', () => {
    const standing = standingOf({ ownCapMicroPerHour: 1_100_000n, defaultCapMicroPerHour: 50_000_000n }, 550_000n);
    expect(() => assertWithinSpendCap(standing, 550_000n)).not.toThrow();
    let error: unknown;
    try {
      assertWithinSpendCap(standing, 550_001n);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(DomainError);
    expect(error).toMatchObject({ code: 'SPEND_RATE_CAP_EXCEEDED', status: 409, retryable: false });
    const message = (error as Error).message;
    for (const figure of ['550001', '550000', '1100000', '0.550001 USDC/h', '1.1 USDC/h']) expect(message).toContain(figure);
  });

  it('calls a change a raise only when the effective cap grows', () => {
    const own = { ownCapMicroPerHour: 5n, defaultCapMicroPerHour: 10n };
    expect(isRaise(own, 4n)).toBe(false);
    expect(isRaise(own, 5n)).toBe(false);
    expect(isRaise(own, 6n)).toBe(true);
    expect(isRaise(own, null)).toBe(true);
    const byDefault = { ownCapMicroPerHour: null, defaultCapMicroPerHour: 10n };
    expect(isRaise(byDefault, 10n)).toBe(false);
    expect(isRaise(byDefault, null)).toBe(false);
    expect(isRaise(byDefault, 11n)).toBe(true);
    expect(isRaise({ ownCapMicroPerHour: 20n, defaultCapMicroPerHour: 10n }, null)).toBe(false);
  });
});
