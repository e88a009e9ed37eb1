import { describe, expect, it } from 'vitest';
import { durationToSeconds, formatUsdc, gibToBytes, usdcToMicro } from './money.js';

describe('money and units on the command line', () => {
  it('reads USDC amounts into micro-USDC exactly, never through a float', () => {
    expect(usdcToMicro('2.5')).toBe(2_500_000n);
    expect(usdcToMicro('0.000001')).toBe(1n);
    expect(usdcToMicro('123456789012.123456')).toBe(123_456_789_012_123_456n);
    for (const bad of ['', '-1', '1.0000001', '1e3', '01', 'abc']) expect(() => usdcToMicro(bad)).toThrow(/USDC amount/);
  });

  it('prints micro-USDC with at least two decimals and no trailing zeros beyond', () => {
    expect(formatUsdc('12500000')).toBe('12.50');
    expect(formatUsdc(1n)).toBe('0.000001');
    expect(formatUsdc('36000000')).toBe('36.00');
    expect(formatUsdc(null)).toBe('-');
  });

  it('reads durations and GiB', () => {
    expect(durationToSeconds('90s')).toBe(90);
    expect(durationToSeconds('30m')).toBe(1800);
    expect(durationToSeconds('2h')).toBe(7200);
    expect(durationToSeconds('1d')).toBe(86_400);
    expect(durationToSeconds('45')).toBe(45);
    expect(() => durationToSeconds('0h')).toThrow();
    expect(gibToBytes('24')).toBe(String(24 * 2 ** 30));
  });
});
