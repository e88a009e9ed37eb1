// Chain amounts to micro-USD. Pure integer arithmetic on bigint; every division rounds down (the platform never
// credits a fraction of a micro it did not receive).

/** Decimals of the ledger's unit: micro-USDC. */
export const MICRO_DECIMALS = 6;
const BPS = 10_000n;

const pow10 = (n: number): bigint => 10n ** BigInt(n);

/**
 * A USD stablecoin amount in its smallest unit to micro-USD, 1:1: 6-decimal USDC passes through, an 18-decimal
 * stablecoin (BNB Chain's USDT, our test token) drops its last 12 digits.
 */
export function stablecoinToMicro(raw: bigint, decimals: number): bigint {
  if (raw < 0n) throw new RangeError('a token amount is never negative');
  return decimals >= MICRO_DECIMALS ? raw / pow10(decimals - MICRO_DECIMALS) : raw * pow10(MICRO_DECIMALS - decimals);
}

/** One reading of a Chainlink-style aggregator (`latestRoundData` and `decimals`). */
export interface PriceReading {
  /** USD per whole coin, scaled by 10^feedDecimals. */
  answer: bigint;
  feedDecimals: number;
  /** When the round was last updated, unix seconds. */
  updatedAtS: bigint;
}

export type PriceRefusal = 'price_not_positive' | 'price_stale';

/**
 * Why a price may not be used at `atS` (unix seconds, the finalized block's time), or null when it may.
 * A price older than maxAgeS is refused, never used: crediting at a stale price would let a depositor pick the rate.
 */
export function priceRefusal(price: PriceReading, atS: bigint, maxAgeS: bigint): PriceRefusal | null {
  if (price.answer <= 0n) return 'price_not_positive';
  if (atS - price.updatedAtS > maxAgeS) return 'price_stale';
  return null;
}

/**
 * A native coin amount (wei for ETH) to micro-USD: floor(amount x price x (10000 - spread_bps) / 10000), one
 * division at the end so only one rounding happens.
 */
export function nativeToMicro(raw: bigint, coinDecimals: number, price: PriceReading, spreadBps: number): bigint {
  if (raw < 0n) throw new RangeError('a coin amount is never negative');
  if (!Number.isInteger(spreadBps) || spreadBps < 0 || spreadBps >= 10_000) throw new RangeError('spread_bps must be 0..9999');
  if (price.answer <= 0n) throw new RangeError('the price must be positive');
  const numerator = raw * price.answer * (BPS - BigInt(spreadBps)) * pow10(MICRO_DECIMALS);
  const denominator = pow10(coinDecimals) * pow10(price.feedDecimals) * BPS;
  return numerator / denominator;
}
