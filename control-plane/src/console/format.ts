// Values as a person reads them. Money is micro-USDC in bigint as on the wire, never a float.

const MICRO = 1_000_000n;

/** "1250000" -> "1.25" (at least two decimals, at most six); "-" for nothing. */
export function usd(micro: string | bigint | null | undefined): string {
  if (micro === null || micro === undefined || micro === '') return '-';
  const value = typeof micro === 'bigint' ? micro : BigInt(micro);
  const abs = value < 0n ? -value : value;
  let fraction = (abs % MICRO).toString().padStart(6, '0').replace(/0+$/, '');
  if (fraction.length < 2) fraction = fraction.padEnd(2, '0');
  return `${value < 0n ? '-' : ''}$${abs / MICRO}.${fraction}`;
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
