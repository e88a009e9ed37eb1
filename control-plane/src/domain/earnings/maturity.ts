// Earnings mature (issue 24 item 4): a host's charge lands as pending earnings and becomes payable once it is
// ARK_EARNINGS_MATURITY_S old, so money that may still have to go back to a renter (an automatic credit, item 3) has
// not left yet. Pure rules only: no store, no clock.

/** The longest maturity accepted (ARK_EARNINGS_MATURITY_S): 90 days. */
export const EARNINGS_MATURITY_MAX_S = 90 * 86_400;

/**
 * When a charge made at `chargedAt` becomes payable; null when maturity is off (0 s): the charge is payable at once,
 * as before issue 24.
 */
export function maturesAtOf(chargedAt: Date, maturityS: number): Date | null {
  if (!Number.isInteger(maturityS) || maturityS < 0 || maturityS > EARNINGS_MATURITY_MAX_S) {
    throw new RangeError(`maturity must be a whole number of seconds from 0 to ${EARNINGS_MATURITY_MAX_S}, got ${maturityS}`);
  }
  return maturityS === 0 ? null : new Date(chargedAt.getTime() + maturityS * 1000);
}

/**
 * How often the maturity worker runs: a tenth of the maturity, between 1 s and 60 s. A lot becomes payable at most
 * that long after its maturity (a minute late on the 24 h default, a second on a test's few seconds).
 */
export function maturityIntervalMsOf(maturityS: number): number {
  return Math.min(60_000, Math.max(1_000, maturityS * 100));
}

/** Is a lot due at `now`? A lot matures at its time exactly, never earlier. */
export function isMatured(maturesAt: Date, now: Date): boolean {
  return maturesAt.getTime() <= now.getTime();
}

/** Where an amount taken back from a host comes from: its pending earnings first, then payable, then the platform. */
export interface EarningsTake {
  fromPendingMicro: bigint;
  fromPayableMicro: bigint;
  /** What the host does not have: the platform's adjustment account pays it, so no balance goes below zero. */
  fromPlatformMicro: bigint;
}

/** Splits `amountMicro` over the host's pending and payable balances, pending first, never below zero. */
export function takeFromEarnings(amountMicro: bigint, pendingMicro: bigint, payableMicro: bigint): EarningsTake {
  if (amountMicro < 0n) throw new RangeError('amount must not be negative');
  const fromPendingMicro = minOf(amountMicro, maxOf(pendingMicro, 0n));
  const fromPayableMicro = minOf(amountMicro - fromPendingMicro, maxOf(payableMicro, 0n));
  return { fromPendingMicro, fromPayableMicro, fromPlatformMicro: amountMicro - fromPendingMicro - fromPayableMicro };
}

/**
 * Takes `amountMicro` off pending lots, newest first (the lots farthest from maturity give first, so what was about
 * to become payable still does). Answers the new remaining amount of each lot touched, by id.
 */
export function takeFromLots(
  lots: ReadonlyArray<{ id: string; remainingMicro: bigint; maturesAt: Date }>,
  amountMicro: bigint,
): Array<{ id: string; takenMicro: bigint; remainingMicro: bigint }> {
  const ordered = [...lots].sort((a, b) => b.maturesAt.getTime() - a.maturesAt.getTime() || (a.id < b.id ? 1 : -1));
  const out: Array<{ id: string; takenMicro: bigint; remainingMicro: bigint }> = [];
  let left = amountMicro;
  for (const lot of ordered) {
    if (left <= 0n) break;
    const taken = minOf(left, lot.remainingMicro);
    if (taken <= 0n) continue;
    out.push({ id: lot.id, takenMicro: taken, remainingMicro: lot.remainingMicro - taken });
    left -= taken;
  }
  return out;
}

const minOf = (a: bigint, b: bigint) => (a < b ? a : b);
const maxOf = (a: bigint, b: bigint) => (a > b ? a : b);
