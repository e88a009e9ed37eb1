import { TELEMETRY_RETENTION_S } from '@ark/shared';
import { DomainError } from '../../errors.js';

// The telemetry read window: `<n>s`, `<n>m` or `<n>h`, default 6h, never longer than the retention.

const WINDOW = /^([1-9][0-9]{0,8})([smh])$/;
const UNIT_S = { s: 1, m: 60, h: 3600 } as const;

/** Seconds in the window. Throws VALIDATION_FAILED when malformed and TELEMETRY_WINDOW_TOO_LONG past the retention (refused, never clamped). */
export function parseTelemetryWindow(text: string | undefined): number {
  const raw = text ?? '6h';
  const match = WINDOW.exec(raw);
  if (!match)
    throw new DomainError('VALIDATION_FAILED', 'querystring/window must look like <n>s, <n>m or <n>h with n >= 1, e.g. 30m or 6h');
  const seconds = Number(match[1]) * UNIT_S[match[2] as keyof typeof UNIT_S];
  if (seconds > TELEMETRY_RETENTION_S) {
    throw new DomainError(
      'TELEMETRY_WINDOW_TOO_LONG',
      `querystring/window is ${seconds} s, longer than the retention of ${TELEMETRY_RETENTION_S} s`,
    );
  }
  return seconds;
}
