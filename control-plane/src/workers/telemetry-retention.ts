import type { Store } from '../store/db.js';
import { purgeTelemetryBefore } from '../store/telemetry.js';
import type { Worker } from './runner.js';

// Telemetry is kept 48 hours (contract part 8); older buckets are deleted by this step.

/** Worker step: deletes telemetry buckets past the retention at `now`. Returns the rows removed. */
export function purgeTelemetry(store: Store, now: Date): Promise<number> {
  return purgeTelemetryBefore(store, now);
}

/** Runs every 5 minutes (one bucket): nothing stays much past the retention. */
export const telemetryRetentionWorker: Worker = { name: 'telemetry-retention', intervalMs: 5 * 60_000, step: purgeTelemetry };
