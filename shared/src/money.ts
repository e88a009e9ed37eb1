// Money and metered milliseconds are bigint inside and base-10 strings on the wire.

const DECIMAL = /^(0|[1-9][0-9]*)$/;

export function parseDecimal(value: string): bigint {
  if (!DECIMAL.test(value)) throw new RangeError(`not a decimal string: ${value}`);
  return BigInt(value);
}

export function toDecimal(value: bigint): string {
  if (value < 0n) throw new RangeError('negative amounts never go on the wire');
  return value.toString(10);
}

export const MICRO_PER_USDC = 1_000_000n;
