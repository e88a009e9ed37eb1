import type { Config } from '../config.js';
import type { Store } from '../store/db.js';
import { JobLifecycle, type JobSettings, jobSettingsOf } from '../store/job-lifecycle.js';
import type { Worker } from './runner.js';

// The job sweeps: each step takes (store, now), so tests drive them with a ManualClock.

/** Every step of the job sweeps, in the order `runOnce` applies them. */
export interface JobSweepSteps {
  /** RUNNING past funded_through (budget time, duration limit, host ceiling) -> STOPPING. */
  funding(store: Store, now: Date): Promise<number>;
  /** Silent machines: RUNNING -> RECONCILING -> FAILED; waiting jobs fail and stopping/cleaning ones close. */
  liveness(store: Store, now: Date): Promise<number>;
  /** RESERVED/STARTING past the start timeout -> STOPPING (a cancellation). */
  startTimeout(store: Store, now: Date): Promise<number>;
  /** STOPPED past the retrieval window -> CLEANING, clean_job queued. */
  retrieval(store: Store, now: Date): Promise<number>;
  /** Unused quotes an hour past expiry are deleted. */
  quotes(store: Store, now: Date): Promise<number>;
}

export function jobSweeps(settings: JobSettings): JobSweepSteps {
  const lifecycles = new WeakMap<Store, JobLifecycle>();
  const of = (store: Store): JobLifecycle => {
    let lifecycle = lifecycles.get(store);
    if (!lifecycle) {
      lifecycle = new JobLifecycle(store, settings);
      lifecycles.set(store, lifecycle);
    }
    return lifecycle;
  };
  return {
    funding: (store, now) => of(store).sweepFunding(now),
    liveness: (store, now) => of(store).sweepLiveness(now),
    startTimeout: (store, now) => of(store).sweepStartTimeout(now),
    retrieval: (store, now) => of(store).sweepRetrieval(now),
    quotes: (store, now) => of(store).purgeQuotes(now),
  };
}

/** Runs every job sweep once at `now` (tests, and `ark-cp jobs sweep`). Returns how many jobs or quotes moved. */
export async function runJobSweeps(store: Store, settings: JobSettings, now: Date): Promise<number> {
  const steps = jobSweeps(settings);
  let moved = 0;
  for (const step of [steps.funding, steps.liveness, steps.startTimeout, steps.retrieval, steps.quotes]) moved += await step(store, now);
  return moved;
}

/** The workers `ark-cp serve` runs for jobs. */
export function jobWorkers(config: Config): Worker[] {
  const steps = jobSweeps(jobSettingsOf(config));
  // Stops and reconciliation follow within seconds; quotes are purged now and then.
  const everyMs = Math.max(1000, Math.min(5000, Math.floor(config.heartbeatIntervalMs / 3)));
  return [
    { name: 'job-funding', intervalMs: everyMs, step: steps.funding },
    { name: 'job-liveness', intervalMs: everyMs, step: steps.liveness },
    { name: 'job-start-timeout', intervalMs: 30_000, step: steps.startTimeout },
    { name: 'job-retrieval', intervalMs: everyMs, step: steps.retrieval },
    { name: 'quote-purge', intervalMs: 10 * 60_000, step: steps.quotes },
  ];
}
