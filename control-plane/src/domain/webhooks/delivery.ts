// When a failed delivery is tried again, and when an endpoint is given up on. Pure: attempts and a clock reading in,
// a decision out.

/**
 * The Standard Webhooks schedule: the first try at once, then after 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and 10 h
 * (about 28 hours in all), each retry with up to 20 % jitter either way so endpoints that failed together are not
 * retried together.
 */
export const RETRY_SCHEDULE_MS: readonly number[] = [5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000];
export const RETRY_JITTER = 0.2;

export type AttemptOutcome =
  | { kind: 'succeeded' }
  /** Try again at `at`. */
  | { kind: 'retry'; at: Date }
  /** The schedule is spent: the delivery failed for good, the endpoint moves on to its next one. */
  | { kind: 'exhausted' };

/**
 * What follows attempt number `attempts` (1 for the first try) that answered `status` (null: no answer).
 * `random` is in [0, 1).
 */
export function afterAttempt(attempts: number, status: number | null, now: Date, random: number): AttemptOutcome {
  if (status !== null && status >= 200 && status < 300) return { kind: 'succeeded' };
  const delay = RETRY_SCHEDULE_MS[attempts - 1];
  if (delay === undefined) return { kind: 'exhausted' };
  const jittered = Math.round(delay * (1 - RETRY_JITTER + 2 * RETRY_JITTER * random));
  return { kind: 'retry', at: new Date(now.getTime() + jittered) };
}

/** 410 Gone: the receiver says the endpoint is no more; it is disabled at once. */
export const isGone = (status: number | null): boolean => status === 410;

/** An endpoint failing without a single success since `failingSince` for longer than `disableAfterMs` is disabled. */
export function failingTooLong(failingSince: Date | null, now: Date, disableAfterMs: number): boolean {
  return failingSince !== null && now.getTime() - failingSince.getTime() >= disableAfterMs;
}

/** Budget shares that tell the renter (`job.budget_threshold`), in percent. */
export const BUDGET_THRESHOLDS_PCT: readonly number[] = [50, 80, 100];

/** The thresholds the charges crossed going from `before` to `after` micro of a `budget` micro budget. */
export function budgetThresholdsCrossed(before: bigint, after: bigint, budget: bigint): number[] {
  if (budget <= 0n || after <= before) return [];
  return BUDGET_THRESHOLDS_PCT.filter((pct) => {
    const line = (budget * BigInt(pct) + 99n) / 100n;
    return before < line && after >= line;
  });
}
