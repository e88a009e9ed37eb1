import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { describeReceiptVerdict, evaluateReceipt, type MeterState, type ReceiptFacts } from './receipts.js';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');
const at = (ms: number) => new Date(T0 + ms);

const state = (overrides: Partial<MeterState> = {}): MeterState => ({
  metering: true,
  fence: 1n,
  lastSeq: 0n,
  meterStartedAt: at(0),
  meterFloorAt: at(0),
  meteredUntil: null,
  durationLimitMs: 3_600_000n,
  hostCeilingAt: at(86_400_000),
  ...overrides,
});

const receipt = (seq: number, fromMs: number, toMs: number, runtimeMs = toMs - fromMs, fence = 1n): ReceiptFacts => ({
  fence,
  seq: BigInt(seq),
  periodStart: at(fromMs),
  periodEnd: at(toMs),
  runtimeMs: BigInt(runtimeMs),
});

describe('evaluateReceipt', () => {
  it('accepts the next receipt and counts its runtime', () => {
    expect(evaluateReceipt(state(), receipt(1, 0, 30_000), at(30_000), 5000)).toEqual({
      outcome: 'accepted',
      countedMs: 30_000n,
      uncountedMs: 0n,
      meteredUntil: at(30_000),
    });
  });

  it('acknowledges a repeat without counting it, and refuses a gap', () => {
    const s = state({ lastSeq: 3n, meteredUntil: at(90_000) });
    expect(evaluateReceipt(s, receipt(3, 60_000, 90_000), at(95_000), 5000)).toEqual({ outcome: 'duplicate' });
    expect(evaluateReceipt(s, receipt(2, 30_000, 60_000), at(95_000), 5000)).toEqual({ outcome: 'duplicate' });
    expect(evaluateReceipt(s, receipt(5, 90_000, 120_000), at(125_000), 5000)).toEqual({ outcome: 'refused', reason: 'seq_gap' });
  });

  it('refuses stale and unknown fences before anything else', () => {
    const s = state({ fence: 2n });
    expect(evaluateReceipt(s, receipt(1, 0, 1000, 1000, 1n), at(1000), 0)).toEqual({ outcome: 'refused', reason: 'stale_fence' });
    expect(evaluateReceipt(s, receipt(1, 0, 1000, 1000, 3n), at(1000), 0)).toEqual({ outcome: 'refused', reason: 'unknown_fence' });
    expect(evaluateReceipt(state({ metering: false }), receipt(1, 0, 1000), at(1000), 0)).toEqual({
      outcome: 'refused',
      reason: 'not_metering',
    });
    expect(evaluateReceipt(state({ meterStartedAt: null }), receipt(1, 0, 1000), at(1000), 0)).toEqual({
      outcome: 'refused',
      reason: 'meter_not_started',
    });
  });

  it('rejects periods outside wall time since the meter started (plus skew) and runtime longer than the period', () => {
    const s = state({ meterStartedAt: at(60_000), meterFloorAt: at(60_000) });
    expect(evaluateReceipt(s, receipt(1, 50_000, 70_000), at(70_000), 5000)).toEqual({
      outcome: 'rejected',
      reason: 'period_before_meter_start',
    });
    expect(evaluateReceipt(s, receipt(1, 56_000, 70_000), at(70_000), 5000).outcome).toBe('accepted');
    expect(evaluateReceipt(s, receipt(1, 60_000, 80_000), at(70_000), 5000)).toEqual({ outcome: 'rejected', reason: 'period_in_future' });
    expect(evaluateReceipt(s, receipt(1, 60_000, 70_000, 10_001), at(70_000), 5000)).toEqual({
      outcome: 'rejected',
      reason: 'runtime_exceeds_period',
    });
    expect(evaluateReceipt(s, receipt(1, 70_000, 60_000, 0), at(70_000), 5000)).toEqual({ outcome: 'rejected', reason: 'period_inverted' });
  });

  it('never counts runtime before the meter floor (a reconciliation gap) or twice over an overlap', () => {
    const gap = state({ lastSeq: 0n, fence: 2n, meterFloorAt: at(100_000), meteredUntil: at(40_000) });
    const verdict = evaluateReceipt(gap, receipt(1, 40_000, 130_000, 90_000, 2n), at(130_000), 5000);
    expect(verdict).toEqual({ outcome: 'accepted', countedMs: 30_000n, uncountedMs: 60_000n, meteredUntil: at(130_000) });
    const overlap = state({ lastSeq: 1n, meteredUntil: at(30_000) });
    expect(evaluateReceipt(overlap, receipt(2, 20_000, 50_000), at(50_000), 5000)).toMatchObject({
      countedMs: 20_000n,
      uncountedMs: 10_000n,
    });
  });

  it('stops counting at the duration limit and the host ceiling', () => {
    const s = state({ durationLimitMs: 45_000n, lastSeq: 1n, meteredUntil: at(30_000) });
    expect(evaluateReceipt(s, receipt(2, 30_000, 60_000), at(60_000), 5000)).toMatchObject({ countedMs: 15_000n, uncountedMs: 15_000n });
    const c = state({ hostCeilingAt: at(10_000) });
    expect(evaluateReceipt(c, receipt(1, 0, 30_000), at(30_000), 5000)).toMatchObject({ countedMs: 10_000n });
  });

  it('describes every refusal in a sentence', () => {
    for (const reason of ['stale_fence', 'unknown_fence', 'not_metering', 'meter_not_started', 'seq_gap'] as const) {
      expect(describeReceiptVerdict({ outcome: 'refused', reason })).toMatch(/refused/);
    }
    expect(describeReceiptVerdict({ outcome: 'rejected', reason: 'period_in_future' })).toMatch(/not counted/);
  });

  it('property: whatever the agent sends, accepted runtime never exceeds wall time since the meter started, nor counts a seq twice', () => {
    const step = fc.record({
      kind: fc.constantFrom('next', 'repeat', 'skip', 'stale'),
      lengthMs: fc.integer({ min: 0, max: 60_000 }),
      runtimeMs: fc.integer({ min: 0, max: 70_000 }),
      waitMs: fc.integer({ min: 0, max: 60_000 }),
      startShiftMs: fc.integer({ min: -20_000, max: 20_000 }),
    });
    fc.assert(
      fc.property(fc.array(step, { maxLength: 80 }), (steps) => {
        let s = state({ fence: 2n });
        let nowMs = 0;
        let periodEnd = 0;
        let total = 0n;
        const counted = new Set<bigint>();
        for (const x of steps) {
          nowMs += x.waitMs;
          const start = Math.max(0, periodEnd + x.startShiftMs);
          const end = Math.min(start + x.lengthMs, nowMs);
          const seq =
            x.kind === 'next' ? s.lastSeq + 1n : x.kind === 'repeat' ? s.lastSeq : x.kind === 'skip' ? s.lastSeq + 2n : s.lastSeq + 1n;
          const fence = x.kind === 'stale' ? 1n : 2n;
          const verdict = evaluateReceipt(s, receipt(Number(seq), start, end, x.runtimeMs, fence), at(nowMs), 5000);
          if (verdict.outcome === 'accepted') {
            expect(counted.has(seq)).toBe(false);
            counted.add(seq);
            total += verdict.countedMs;
            s = { ...s, lastSeq: seq, meteredUntil: verdict.meteredUntil };
            periodEnd = end;
          } else if (verdict.outcome === 'rejected') {
            s = { ...s, lastSeq: seq };
          }
          expect(total).toBeLessThanOrEqual(BigInt(nowMs + 5000));
          expect(total).toBeLessThanOrEqual(s.durationLimitMs);
        }
      }),
      { numRuns: 300 },
    );
  });
});
