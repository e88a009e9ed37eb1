import type { Config } from '../config/index.js';
import type { JobSweeps } from '../services/jobs/index.js';
import type { Worker } from './runner.js';

// The job sweeps as workers: each step runs the shared services' sweep at the runner's `now`, so tests drive them
// with a ManualClock (or call `services.jobs.sweeps` directly).

/** The workers `ark-cp serve` runs for jobs. */
export function jobWorkers(sweeps: JobSweeps, config: Pick<Config, 'heartbeatIntervalMs'>): Worker[] {
  // Stops and reconciliation follow within seconds; quotes are purged now and then.
  const everyMs = Math.max(1000, Math.min(5000, Math.floor(config.heartbeatIntervalMs / 3)));
  return [
    { name: 'job-funding', intervalMs: everyMs, step: (_store, now) => sweeps.funding(now) },
    { name: 'job-liveness', intervalMs: everyMs, step: (_store, now) => sweeps.liveness(now) },
    { name: 'job-start-timeout', intervalMs: 30_000, step: (_store, now) => sweeps.startTimeout(now) },
    { name: 'job-retrieval', intervalMs: everyMs, step: (_store, now) => sweeps.retrieval(now) },
    { name: 'quote-purge', intervalMs: 10 * 60_000, step: (_store, now) => sweeps.quotes(now) },
  ];
}
