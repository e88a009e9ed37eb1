// Values as a person reads them. Money is micro-USDC in bigint as on the wire, never a float.

const MICRO = 1_000_000n;

/**
 * Money as a person reads it, one rule everywhere in the console: two decimals at or above $1 (rounded half up to the
 * cent: "4981663" -> "$4.98", "20000000" -> "$20.00"), and below $1 to the micro-dollar with at least two decimals
 * ("18337" -> "$0.018337", "500000" -> "$0.50"), so a small rate or charge never reads as $0.00. "-" for nothing.
 */
export function usd(micro: string | bigint | null | undefined): string {
  if (micro === null || micro === undefined || micro === '') return '-';
  const value = typeof micro === 'bigint' ? micro : BigInt(micro);
  const sign = value < 0n ? '-' : '';
  const abs = value < 0n ? -value : value;
  if (abs >= MICRO) {
    const cents = (abs + 5_000n) / 10_000n;
    return `${sign}$${groups(cents / 100n)}.${(cents % 100n).toString().padStart(2, '0')}`;
  }
  let fraction = abs.toString().padStart(6, '0').replace(/0+$/, '');
  if (fraction.length < 2) fraction = fraction.padEnd(2, '0');
  return `${sign}$0.${fraction}`;
}

/** Whole dollars with thousands separators: 1234567 -> "1,234,567". */
function groups(whole: bigint): string {
  return whole.toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** The exact amount as a form field's value ("4981663" -> "4.981663", "20000000" -> "20"): never rounded. */
export function usdInput(micro: string | bigint | null | undefined): string {
  if (micro === null || micro === undefined || micro === '') return '';
  return units(typeof micro === 'bigint' ? micro.toString() : micro, 6);
}

/** A job's or offer's GPUs: "2 × NVIDIA L4"; a machine without GPUs is "CPU only", never "- × -". */
export function gpus(count: number | string | null | undefined, model: string | null | undefined): string {
  const n = Number(count ?? 0);
  if (!model || !Number.isFinite(n) || n <= 0) return 'CPU only';
  return `${n} × ${model}`;
}

/** Seconds as "1 h 30 min", "45 min", "20 s". */
export function duration(seconds: number | string | null | undefined): string {
  if (seconds === null || seconds === undefined) return '-';
  const s = Math.max(0, Math.round(Number(seconds)));
  if (s < 60) return `${s} s`;
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return h === 0 ? `${m} min` : m === 0 ? `${h} h` : `${h} h ${m} min`;
}

/** A decimal USD amount typed in a form ("2.5") -> micro-USDC, or null when it is not one. */
export function usdToMicro(text: string): bigint | null {
  const match = /^\s*\$?(0|[1-9][0-9]{0,11})(?:\.([0-9]{1,6}))?\s*$/.exec(text);
  if (match === null) return null;
  return BigInt(match[1] as string) * MICRO + BigInt((match[2] ?? '').padEnd(6, '0'));
}

/** A token amount in its smallest unit as whole units: ("40500000", 6) -> "40.5"; exact, no float. */
export function units(raw: string | null | undefined, decimals: number): string {
  if (raw === null || raw === undefined || raw === '') return '-';
  const value = BigInt(raw);
  const scale = 10n ** BigInt(decimals);
  const fraction = (value % scale).toString().padStart(decimals, '0').replace(/0+$/, '');
  return fraction === '' ? `${value / scale}` : `${value / scale}.${fraction}`;
}

/** Bytes as GiB with one decimal. */
export function gib(bytes: string | number | null | undefined): string {
  if (bytes === null || bytes === undefined) return '-';
  return `${(Number(bytes) / 2 ** 30).toFixed(1)} GiB`;
}

/** An RFC 3339 instant as "2026-11-25 01:40 UTC". */
export function when(value: string | null | undefined): string {
  if (!value) return '-';
  return `${value.slice(0, 10)} ${value.slice(11, 16)} UTC`;
}

/** "0.9731" -> "97.3 %". */
export function percent(score: string | number | null | undefined): string {
  if (score === null || score === undefined) return '-';
  return `${(Number(score) * 100).toFixed(1)} %`;
}
