// The one source of time of both daemons. Everything that expires, retries, meters, polls or watches reads this
// instead of Date.now() and the global timers, so a test can advance a ManualClock tick by tick (coder's quartz
// clock is the model), and each composition root (control-plane/src/main.ts, host-agent/src/main.ts) hands every
// part the system one.

/** A timer as a clock hands it out; unref() lets the process exit while it waits. */
export interface ClockTimer {
  unref(): unknown;
}

export interface Clock {
  /** Wall time: what is stored, compared with stored times and shown. It may step (NTP). */
  now(): Date;
  /**
   * Milliseconds on a clock that never steps, from an arbitrary origin: only differences mean anything. Durations
   * measured between two events (a connection's quiet time) read this, so a wall-clock step neither fires nor holds
   * them.
   */
  monotonicMs(): number;
  /**
   * Calls `callback` once after `delayMs`. The system clock ignores what the callback returns; a
   * ManualClock awaits a returned promise, so advancing past a timer also waits for its work.
   */
  setTimeout(callback: () => unknown, delayMs: number): ClockTimer;
  clearTimeout(timer: ClockTimer | null | undefined): void;
  /** Calls `callback` every `intervalMs` until cleared. */
  setInterval(callback: () => unknown, intervalMs: number): ClockTimer;
  clearInterval(timer: ClockTimer | null | undefined): void;
  /** Resolves after `ms`, or as soon as `signal` aborts; never rejects. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** sleep() over any clock's timers: resolves after `ms`, or when `signal` aborts. */
export function sleepOn(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = clock.setTimeout(done, ms);
    function done() {
      clock.clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** Real time and Node's own timers. Only a composition root names it; everything else is handed a Clock. */
export const systemClock: Clock = {
  now: () => new Date(),
  monotonicMs: () => performance.now(),
  setTimeout: (callback, delayMs) => setTimeout(callback, delayMs),
  clearTimeout: (timer) => clearTimeout(timer as NodeJS.Timeout | undefined),
  setInterval: (callback, intervalMs) => setInterval(callback, intervalMs),
  clearInterval: (timer) => clearInterval(timer as NodeJS.Timeout | undefined),
  sleep: (ms, signal) => sleepOn(systemClock, ms, signal),
};
