import { describe, expect, it } from 'vitest';
import { DomainError } from '../../errors.js';
import { parseTelemetryWindow } from './window.js';

const codeOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (error) {
    return error instanceof DomainError ? error.code : 'not a DomainError';
  }
  return undefined;
};

describe('telemetry window', () => {
  it('parses <n>s, <n>m and <n>h; 6h by default', () => {
    expect(parseTelemetryWindow(undefined)).toBe(21_600);
    expect(parseTelemetryWindow('1s')).toBe(1);
    expect(parseTelemetryWindow('90s')).toBe(90);
    expect(parseTelemetryWindow('30m')).toBe(1800);
    expect(parseTelemetryWindow('48h')).toBe(172_800);
    expect(parseTelemetryWindow('2880m')).toBe(172_800);
    expect(parseTelemetryWindow('172800s')).toBe(172_800);
  });

  it('refuses malformed windows with VALIDATION_FAILED naming the field', () => {
    for (const bad of ['', '6', 'h', '0h', '06h', '-1h', '1.5h', '1d', '6H', ' 6h', '6h ', '1h30m', '9999999999h']) {
      expect(
        codeOf(() => parseTelemetryWindow(bad)),
        bad,
      ).toBe('VALIDATION_FAILED');
    }
    try {
      parseTelemetryWindow('1d');
    } catch (error) {
      expect((error as Error).message).toContain('querystring/window');
    }
  });

  it('refuses, never clamps, a window above the retention', () => {
    expect(codeOf(() => parseTelemetryWindow('49h'))).toBe('TELEMETRY_WINDOW_TOO_LONG');
    expect(codeOf(() => parseTelemetryWindow('172801s'))).toBe('TELEMETRY_WINDOW_TOO_LONG');
    expect(codeOf(() => parseTelemetryWindow('2881m'))).toBe('TELEMETRY_WINDOW_TOO_LONG');
  });
});
