import { usageError } from './exit-codes.js';

// Money is micro-USDC in bigint (1 USDC = 1 000 000 micro), as on the wire; never a float.

const MICRO_PER_USDC = 1_000_000n;

/** "1.5" (USDC) -> 1500000n. At most six decimals; anything else is a usage error. */
export function usdcToMicro(text: string, what = 'amount'): bigint {
  const match = /^(0|[1-9][0-9]*)(?:\.([0-9]{1,6}))?$/.exec(text.trim());
  if (match === null) throw usageError(`${what} must be a USDC amount with at most six decimals, like 2.5 (got "${text}")`);
  const whole = BigInt(match[1] as string);
  const fraction = BigInt((match[2] ?? '').padEnd(6, '0'));
  return whole * MICRO_PER_USDC + fraction;
}

/** 1500000n or "1500000" -> "1.50" (at least two decimals, no trailing zeros beyond). */
export function formatUsdc(micro: bigint | string | null | undefined): string {
  if (micro === null || micro === undefined) return '-';
  const value = typeof micro === 'bigint' ? micro : BigInt(micro);
  const negative = value < 0n;
  const abs = negative ? -value : value;
  const whole = abs / MICRO_PER_USDC;
  let fraction = (abs % MICRO_PER_USDC).toString().padStart(6, '0').replace(/0+$/, '');
  if (fraction.length < 2) fraction = fraction.padEnd(2, '0');
  return `${negative ? '-' : ''}${whole}.${fraction}`;
}

/** Bytes as GiB with one decimal ("24.0"). */
export function formatGib(bytes: string | number | bigint | null | undefined): string {
  if (bytes === null || bytes === undefined) return '-';
  return (Number(BigInt(bytes)) / 2 ** 30).toFixed(1);
}

/** "24" GiB -> bytes as a decimal string. */
export function gibToBytes(text: string, what = 'size'): string {
  if (!/^[0-9]+(\.[0-9]+)?$/.test(text)) throw usageError(`${what} must be a number of GiB (got "${text}")`);
  return BigInt(Math.round(Number(text) * 2 ** 30)).toString();
}

/** "90s", "30m", "2h", "1d" -> seconds. */
export function durationToSeconds(text: string, what = 'duration'): number {
  const match = /^([1-9][0-9]*)([smhd]?)$/.exec(text.trim());
  if (match === null) throw usageError(`${what} must look like 90s, 30m, 2h or 1d (got "${text}")`);
  const unit = { '': 1, s: 1, m: 60, h: 3600, d: 86_400 }[match[2] as '' | 's' | 'm' | 'h' | 'd'];
  return Number(match[1]) * unit;
}
