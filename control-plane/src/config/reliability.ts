import { parseScore } from '../domain/machines/reliability.js';

// The machine reliability part of the configuration (issue 10 item 2). Read once by loadConfig; a bad value stops the
// server with exit code 2 and a message naming the variable. Small windows are allowed so tests can use them.

export interface ReliabilityConfig {
  /** ARK_RELIABILITY_FLOOR, in ten-thousandths: a machine that is not new and scores under it is not offered. */
  floorE4: number;
  /** ARK_RELIABILITY_WINDOW_S: the rolling window the score covers. */
  windowMs: number;
  /** ARK_RELIABILITY_MIN_HISTORY_S: a machine first seen more recently is `new` (never held, no min_reliability match). */
  minHistoryMs: number;
  /** ARK_RELIABILITY_INTERVAL_MS: how often the reliability worker scores every machine. */
  intervalMs: number;
}

type Env = Record<string, string | undefined>;
/** loadConfig's integer reader: the variable's value, its default, and its bounds (a bad value stops the start). */
type IntOf = (name: string, fallback: number, min: number, max: number) => number;

export function reliabilityConfigFrom(env: Env, int: IntOf, fail: (message: string) => Error): ReliabilityConfig {
  const floorText = env.ARK_RELIABILITY_FLOOR || '0.98';
  const floorE4 = parseScore(floorText);
  if (floorE4 === null) {
    throw fail(`ARK_RELIABILITY_FLOOR must be a decimal from 0 to 1 with at most 4 decimals, got "${floorText}"`);
  }
  return {
    floorE4,
    windowMs: int('ARK_RELIABILITY_WINDOW_S', 30 * 86400, 60, 365 * 86400) * 1000,
    minHistoryMs: int('ARK_RELIABILITY_MIN_HISTORY_S', 7 * 86400, 0, 365 * 86400) * 1000,
    intervalMs: int('ARK_RELIABILITY_INTERVAL_MS', 60_000, 100, 24 * 3600 * 1000),
  };
}
