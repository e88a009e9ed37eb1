// Pricing (DESIGN.md "Pricing and metering"). Pure and bigint: money never passes through a float.

const BPS = 10_000n;

const bps = (value: number | bigint): bigint => {
  const b = BigInt(value);
  if (b < 0n) throw new RangeError('basis points must not be negative');
  return b;
};

/** What a renter pays per hour: floor(machine rate * (10000 + fee bps) / 10000), micro-USDC. */
export function totalRateMicroPerHour(machineRateMicroPerHour: bigint, platformFeeBps: number | bigint): bigint {
  if (machineRateMicroPerHour < 0n) throw new RangeError('a rate must not be negative');
  return (machineRateMicroPerHour * (BPS + bps(platformFeeBps))) / BPS;
}

/**
 * The largest machine rate whose total rate stays at or under `maxTotalMicroPerHour`, so a renter's price
 * ceiling can be applied to stored machine rates: rate <= this  <=>  totalRate(rate) <= maxTotal.
 */
export function maxMachineRateForTotal(maxTotalMicroPerHour: bigint, platformFeeBps: number | bigint): bigint {
  if (maxTotalMicroPerHour < 0n) throw new RangeError('a rate must not be negative');
  return (maxTotalMicroPerHour * BPS + (BPS - 1n)) / (BPS + bps(platformFeeBps));
}

/** Informational estimate of a quote: floor(total rate * duration / 3600), fee included. */
export function estimatedTotalMicro(totalRate: bigint, durationLimitS: bigint): bigint {
  return (totalRate * durationLimitS) / 3600n;
}
