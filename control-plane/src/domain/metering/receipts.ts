// Meter receipt acceptance (DESIGN.md "Pricing and metering"). Pure: the caller passes the job's meter state,
// the receipt and the control plane's now.

/** The job's side of the meter, as stored. */
export interface MeterState {
  /** Whether the job is in a state that takes receipts (RUNNING, or STOPPING for the final one). */
  metering: boolean;
  fence: bigint;
  /** Highest meter_seq accepted under the current fence (0: none yet). */
  lastSeq: bigint;
  meterStartedAt: Date | null;
  /** Runtime before this instant is never charged (the meter start, or the end of a reconciliation gap). */
  meterFloorAt: Date | null;
  /** End of the latest accepted period: runtime is never counted twice. */
  meteredUntil: Date | null;
  /** The meter counts at most this long after it started. */
  durationLimitMs: bigint;
  /** Runtime past the host-availability ceiling is not charged. */
  hostCeilingAt: Date;
}

export interface ReceiptFacts {
  fence: bigint;
  seq: bigint;
  periodStart: Date;
  periodEnd: Date;
  runtimeMs: bigint;
}

/** Refusals that leave the sequence where it was: the receipt is not this job's next one. */
export type ReceiptRefusal = 'stale_fence' | 'unknown_fence' | 'not_metering' | 'meter_not_started' | 'seq_gap';

/** Refusals of a receipt's content: its seq is used up, nothing is counted, the meter moves on. */
export type ReceiptRejection = 'period_inverted' | 'runtime_exceeds_period' | 'period_before_meter_start' | 'period_in_future';

export type ReceiptVerdict =
  | { outcome: 'refused'; reason: ReceiptRefusal }
  | { outcome: 'duplicate' }
  | { outcome: 'rejected'; reason: ReceiptRejection }
  | {
      outcome: 'accepted';
      /** Runtime added to the job's accepted runtime. */
      countedMs: bigint;
      /** Runtime the agent reported that is not charged (a reconciliation gap, an overlap, past a limit). */
      uncountedMs: bigint;
      meteredUntil: Date;
    };

const ms = (d: Date): bigint => BigInt(d.getTime());
const max = (a: bigint, b: bigint): bigint => (a > b ? a : b);
const min = (a: bigint, b: bigint): bigint => (a < b ? a : b);

/**
 * Decides one receipt. Order matters: the fence first (a stale agent learns nothing else), then whether the job
 * meters at all, then the sequence (a repeat of an accepted seq is acknowledged, not counted again; a gap is
 * refused), then the period: inside wall time since the meter started (plus `skewMs`), runtime within the period.
 *
 * An accepted receipt counts only the part of its period after the meter floor and after the end of the last
 * accepted period, and before the duration limit and host ceiling run out, so runtime is never counted twice and
 * never counted for a gap.
 */
export function evaluateReceipt(state: MeterState, receipt: ReceiptFacts, now: Date, skewMs: number): ReceiptVerdict {
  if (receipt.fence < state.fence) return { outcome: 'refused', reason: 'stale_fence' };
  if (receipt.fence > state.fence) return { outcome: 'refused', reason: 'unknown_fence' };
  if (!state.metering) return { outcome: 'refused', reason: 'not_metering' };
  if (state.meterStartedAt === null) return { outcome: 'refused', reason: 'meter_not_started' };
  if (receipt.seq <= state.lastSeq) return { outcome: 'duplicate' };
  if (receipt.seq !== state.lastSeq + 1n) return { outcome: 'refused', reason: 'seq_gap' };

  const skew = BigInt(Math.max(0, Math.trunc(skewMs)));
  const start = ms(receipt.periodStart);
  const end = ms(receipt.periodEnd);
  if (end < start) return { outcome: 'rejected', reason: 'period_inverted' };
  if (receipt.runtimeMs < 0n || receipt.runtimeMs > end - start) return { outcome: 'rejected', reason: 'runtime_exceeds_period' };
  const meterStart = ms(state.meterStartedAt);
  if (start < meterStart - skew) return { outcome: 'rejected', reason: 'period_before_meter_start' };
  if (end > ms(now) + skew) return { outcome: 'rejected', reason: 'period_in_future' };

  let windowStart = max(start, meterStart);
  if (state.meterFloorAt !== null) windowStart = max(windowStart, ms(state.meterFloorAt));
  if (state.meteredUntil !== null) windowStart = max(windowStart, ms(state.meteredUntil));
  const windowEnd = min(end, min(meterStart + state.durationLimitMs, ms(state.hostCeilingAt)));
  const countable = windowEnd > windowStart ? windowEnd - windowStart : 0n;
  const countedMs = min(receipt.runtimeMs, countable);
  const previousUntil = state.meteredUntil === null ? end : max(ms(state.meteredUntil), end);
  return {
    outcome: 'accepted',
    countedMs,
    uncountedMs: receipt.runtimeMs - countedMs,
    meteredUntil: new Date(Number(previousUntil)),
  };
}

/** A sentence for the job's event list. */
export function describeReceiptVerdict(verdict: Exclude<ReceiptVerdict, { outcome: 'accepted' } | { outcome: 'duplicate' }>): string {
  switch (verdict.reason) {
    case 'stale_fence':
      return 'Meter receipt refused: it carries an older fence than the job (a stale agent session).';
    case 'unknown_fence':
      return 'Meter receipt refused: it carries a fence the control plane never issued.';
    case 'not_metering':
      return 'Meter receipt refused: the job is not metering in its current state.';
    case 'meter_not_started':
      return 'Meter receipt refused: the meter has not started (no verified readiness).';
    case 'seq_gap':
      return 'Meter receipt refused: it is not the next receipt in sequence.';
    case 'period_inverted':
      return 'Meter receipt not counted: its period ends before it starts.';
    case 'runtime_exceeds_period':
      return 'Meter receipt not counted: its runtime is longer than its period.';
    case 'period_before_meter_start':
      return 'Meter receipt not counted: its period starts before the meter started.';
    case 'period_in_future':
      return "Meter receipt not counted: its period ends after the control plane's current time.";
  }
}
