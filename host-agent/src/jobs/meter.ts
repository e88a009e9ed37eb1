// Meter arithmetic, pure: how long the container ran inside a reporting period, and the receipt
// for that period. Runtime comes from Docker's own start and finish times, so an agent that was
// down for a while still reports what really ran, and never more than the period.
import type { MeterReceiptBody, MeterState } from './job-record.js';

export type RunInterval = {
  /** When the container last started; undefined if it never did. */
  startedAt?: Date;
  /** When it stopped; undefined while it runs. */
  finishedAt?: Date;
  running: boolean;
};

/** Milliseconds of [periodStart, periodEnd] during which the container ran. */
export function runtimeInPeriodMs(periodStart: Date, periodEnd: Date, run: RunInterval | undefined): bigint {
  if (run?.startedAt === undefined) return 0n;
  const from = Math.max(periodStart.getTime(), run.startedAt.getTime());
  const until = run.running ? periodEnd.getTime() : Math.min(periodEnd.getTime(), run.finishedAt?.getTime() ?? run.startedAt.getTime());
  const to = Math.min(until, periodEnd.getTime());
  return to > from ? BigInt(to - from) : 0n;
}

export type ReceiptInput = {
  jobId: string;
  fence: string;
  meter: MeterState;
  now: Date;
  run: RunInterval | undefined;
  final: boolean;
};

/**
 * The next receipt and the meter state after it, or undefined when there is nothing to report
 * (no time has passed since the last period, and it is not the final receipt). A period never
 * overlaps the previous one: it starts where that one ended.
 */
export function nextReceipt(input: ReceiptInput): { receipt: MeterReceiptBody; meter: MeterState } | undefined {
  if (input.meter.final_sent) return undefined;
  const periodStart = new Date(input.meter.period_end);
  // A clock that stepped backwards yields an empty period rather than an inverted one.
  const periodEnd = input.now.getTime() > periodStart.getTime() ? input.now : periodStart;
  if (periodEnd.getTime() === periodStart.getTime() && !input.final) return undefined;
  const seq = input.meter.seq + 1;
  const runtimeMs = runtimeInPeriodMs(periodStart, periodEnd, input.run);
  const total = BigInt(input.meter.runtime_ms_total ?? '0') + runtimeMs;
  return {
    receipt: {
      t: 'meter_receipt',
      job_id: input.jobId,
      fence: input.fence,
      meter_seq: seq,
      period_start: periodStart.toISOString(),
      period_end: periodEnd.toISOString(),
      runtime_ms: runtimeMs.toString(),
      final: input.final,
    },
    meter: { seq, period_end: periodEnd.toISOString(), final_sent: input.final, runtime_ms_total: total.toString() },
  };
}

/** Delay until the next periodic receipt is due. */
export function nextMeterDelayMs(meter: MeterState, intervalS: number, now: Date): number {
  const due = new Date(meter.period_end).getTime() + intervalS * 1000;
  return Math.max(0, due - now.getTime());
}
