import type { Clock, ClockTimer } from '../clock.js';
import type { Store } from '../store/db.js';

// A minimal interval runner: each worker's step runs, then waits its interval, then runs again. Steps never
// overlap themselves; a failing step is logged and retried at the next interval. The waits are the injected
// clock's timers: a test advances a ManualClock past an interval and finds the step done.

export interface Worker {
  name: string;
  intervalMs: number;
  step(store: Store, now: Date): Promise<unknown>;
}

export interface WorkerLogger {
  info(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export interface WorkerRunner {
  /** Runs every worker's step once now, in order (tests and the `workers run` habit of operators). */
  runOnce(): Promise<void>;
  /** Stops scheduling and waits for running steps to finish. */
  stop(): Promise<void>;
}

export function startWorkers(input: {
  store: Store;
  clock: Clock;
  logger: WorkerLogger;
  workers: Worker[];
  schedule?: boolean;
}): WorkerRunner {
  const { store, clock, logger, workers } = input;
  const timers = new Set<ClockTimer>();
  const running = new Set<Promise<void>>();
  let stopped = false;

  const run = (worker: Worker): Promise<void> => {
    const started = clock.monotonicMs();
    const done = worker
      .step(store, clock.now())
      .then((result) => {
        if (typeof result === 'number' && result > 0)
          logger.info({ worker: worker.name, result, ms: Math.round(clock.monotonicMs() - started) }, 'worker step');
      })
      .catch((error: unknown) => logger.error({ err: error, worker: worker.name }, 'worker step failed'))
      .finally(() => running.delete(done));
    running.add(done);
    return done;
  };

  const schedule = (worker: Worker): void => {
    if (stopped) return;
    const timer = clock.setTimeout(() => {
      timers.delete(timer);
      // Returned so that a ManualClock's advance() waits for the step (the system clock ignores it).
      return run(worker).then(() => schedule(worker));
    }, worker.intervalMs);
    // Workers never keep the process alive on their own.
    timer.unref();
    timers.add(timer);
  };

  if (input.schedule !== false) for (const worker of workers) schedule(worker);

  return {
    async runOnce() {
      for (const worker of workers) await run(worker);
    },
    async stop() {
      stopped = true;
      for (const timer of timers) clock.clearTimeout(timer);
      timers.clear();
      await Promise.all([...running]);
    },
  };
}
