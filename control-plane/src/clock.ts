// Every expiry, heartbeat, retention, meter, timeout, poll and schedule reads a Clock, so tests advance time instead
// of waiting for it. The clock itself is the agent's too (shared/src/clock/): wall time, a monotonic reading, timers
// and sleep, and a ManualClock whose advance() fires what falls due. main.ts builds the system one, once.
export { type Clock, type ClockTimer, ManualClock, sleepOn, systemClock } from '@ark/shared/clock/index';

/** ISO string with milliseconds, UTC: sorts lexicographically, which the store relies on. */
export function iso(date: Date): string {
  return date.toISOString();
}
