import { describe, expect, it } from 'vitest';
import { nextMeterDelayMs, nextReceipt, runtimeInPeriodMs } from './meter.js';

const at = (seconds: number) => new Date(Date.UTC(2030, 0, 1, 0, 0, seconds));
const jobId = '00000000-0000-4000-8000-000000000001';

describe('runtimeInPeriodMs', () => {
  it('counts only the time the container ran inside the period', () => {
    expect(runtimeInPeriodMs(at(10), at(40), { startedAt: at(0), running: true })).toBe(30_000n);
    expect(runtimeInPeriodMs(at(10), at(40), { startedAt: at(20), running: true })).toBe(20_000n);
    expect(runtimeInPeriodMs(at(10), at(40), { startedAt: at(0), finishedAt: at(25), running: false })).toBe(15_000n);
    expect(runtimeInPeriodMs(at(10), at(40), { startedAt: at(0), finishedAt: at(5), running: false })).toBe(0n);
    expect(runtimeInPeriodMs(at(10), at(40), { startedAt: at(50), running: true })).toBe(0n);
    expect(runtimeInPeriodMs(at(10), at(40), { running: false })).toBe(0n);
    expect(runtimeInPeriodMs(at(10), at(40), undefined)).toBe(0n);
    // A finished container without a finish time counts nothing.
    expect(runtimeInPeriodMs(at(10), at(40), { startedAt: at(0), running: false })).toBe(0n);
  });
});

describe('nextReceipt', () => {
  const run = { startedAt: at(0), running: true };

  it('issues the next seq over the period since the last one', () => {
    const first = nextReceipt({
      jobId,
      fence: '3',
      meter: { seq: 0, period_end: at(5).toISOString(), final_sent: false },
      now: at(35),
      run,
      final: false,
    });
    expect(first?.receipt).toEqual({
      t: 'meter_receipt',
      job_id: jobId,
      fence: '3',
      meter_seq: 1,
      period_start: at(5).toISOString(),
      period_end: at(35).toISOString(),
      runtime_ms: '30000',
      final: false,
    });
    const second = nextReceipt({ jobId, fence: '3', meter: first?.meter as never, now: at(65), run, final: false });
    expect(second?.receipt).toMatchObject({ meter_seq: 2, period_start: at(35).toISOString(), period_end: at(65).toISOString() });
    // The running total is what the agent reported in all, for `ark-agent status` and audits against the control plane.
    expect(first?.meter.runtime_ms_total).toBe('30000');
    expect(second?.meter.runtime_ms_total).toBe('60000');
    const late = nextReceipt({
      jobId,
      fence: '3',
      meter: second?.meter as never,
      now: at(95),
      run: { ...run, running: false, finishedAt: at(70) },
      final: true,
    });
    expect(late?.meter.runtime_ms_total).toBe('65000');
  });

  it('sends nothing for an empty period, except the final receipt, and nothing after it', () => {
    const meter = { seq: 4, period_end: at(10).toISOString(), final_sent: false };
    expect(nextReceipt({ jobId, fence: '1', meter, now: at(10), run, final: false })).toBeUndefined();
    // A clock that went backwards never yields an inverted period.
    expect(nextReceipt({ jobId, fence: '1', meter, now: at(5), run, final: false })).toBeUndefined();
    const final = nextReceipt({ jobId, fence: '1', meter, now: at(5), run, final: true });
    expect(final?.receipt).toMatchObject({
      meter_seq: 5,
      period_start: at(10).toISOString(),
      period_end: at(10).toISOString(),
      runtime_ms: '0',
      final: true,
    });
    expect(nextReceipt({ jobId, fence: '1', meter: final?.meter as never, now: at(60), run, final: true })).toBeUndefined();
  });

  it('schedules the next receipt an interval after the last period', () => {
    const meter = { seq: 1, period_end: at(30).toISOString(), final_sent: false };
    expect(nextMeterDelayMs(meter, 30, at(40))).toBe(20_000);
    expect(nextMeterDelayMs(meter, 30, at(90))).toBe(0);
  });
});
