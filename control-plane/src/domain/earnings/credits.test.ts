import { describe, expect, it } from 'vitest';
import { chargesFor } from '../metering/charges.js';
import { creditFor, isHostFault } from './credits.js';

const rate = { machineRateMicroPerHour: 500_000n, platformFeeBps: 1000n };
const start = Date.parse('2026-11-27T12:00:00.000Z');
const facts = (acceptedRuntimeMs: bigint, meteredUntilMs: number | null, healthyAtMs: number | null) => {
  const charged = chargesFor(rate, 10_000_000n, acceptedRuntimeMs);
  return {
    rate,
    fundedBudgetMicro: 10_000_000n,
    acceptedRuntimeMs,
    chargedHostMicro: charged.hostMicro,
    chargedFeeMicro: charged.feeMicro,
    meteredUntil: meteredUntilMs === null ? null : new Date(start + meteredUntilMs),
    healthyAt: healthyAtMs === null ? null : new Date(start + healthyAtMs),
  };
};

describe('automatic credits (issue 24 item 3)', () => {
  it('credits the host-side failures only', () => {
    expect(['agent_lost', 'machine_lost', 'job_failed'].every((r) => isHostFault(r as never))).toBe(true);
    expect(['stopped_by_renter', 'container_exited', 'budget_exhausted', 'launch_failed'].some((r) => isHostFault(r as never))).toBe(false);
  });

  it('gives back the charges of the runtime metered after the last healthy heartbeat, split as they were charged', () => {
    const credit = creditFor(facts(30_000n, 30_000, 20_000));
    const all = chargesFor(rate, 10_000_000n, 30_000n);
    const healthy = chargesFor(rate, 10_000_000n, 20_000n);
    expect(credit).toEqual({
      runtimeMs: 10_000n,
      hostMicro: all.hostMicro - healthy.hostMicro,
      feeMicro: all.feeMicro - healthy.feeMicro,
      totalMicro: all.cumulativeMicro - healthy.cumulativeMicro,
    });
  });

  it('gives nothing back when the last period ended before the healthy point, everything when none is known', () => {
    expect(creditFor(facts(30_000n, 30_000, 31_000)).totalMicro).toBe(0n);
    expect(creditFor(facts(30_000n, 30_000, null)).totalMicro).toBe(chargesFor(rate, 10_000_000n, 30_000n).cumulativeMicro);
    expect(creditFor(facts(0n, null, 5_000)).totalMicro).toBe(0n);
  });

  it('never gives back more runtime than was accepted (a gap in the meter is not charged, so not credited)', () => {
    // 10 s accepted, but the meter's last period ends 60 s after the healthy point: at most the 10 s come back.
    const credit = creditFor(facts(10_000n, 120_000, 60_000));
    expect(credit.runtimeMs).toBe(10_000n);
    expect(credit.totalMicro).toBe(chargesFor(rate, 10_000_000n, 10_000n).cumulativeMicro);
  });
});
