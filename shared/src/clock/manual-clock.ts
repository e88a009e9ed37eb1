// A clock for tests that moves only when told to. advance() walks time forward timer by timer: each
// timer that falls due on the way fires at its own due time, in due order, and its work (a promise
// the callback returns) settles before the next one fires. So a test advances a meter by exactly one
// tick and finds that tick's receipt already handed to the channel, or a gateway past its idle timeout
// and finds the connection closed, in milliseconds of real time.
import { type Clock, type ClockTimer, sleepOn } from './clock.js';

/** Node's own bounds: a delay below 1 ms, above 2^31-1 ms or not a number becomes 1 ms. */
const TIMER_DELAY_MS_MAX = 2 ** 31 - 1;
/** Timers one advance() may fire before it decides a timer keeps re-arming itself at once. */
const FIRES_PER_ADVANCE_MAX = 100_000;

function nodeDelay(delayMs: number): number {
  return Number.isFinite(delayMs) && delayMs >= 1 && delayMs <= TIMER_DELAY_MS_MAX ? Math.floor(delayMs) : 1;
}

class ManualTimer implements ClockTimer {
  constructor(
    readonly id: number,
    public dueMs: number,
    readonly callback: () => unknown,
    /** Set for an interval: it is re-armed this long after each firing. */
    readonly intervalMs: number | undefined,
  ) {}
  unref(): this {
    return this;
  }
}

export class ManualClock implements Clock {
  /** Monotonic time: advance() moves it, set() does not. Timers are due on it. */
  #monoMs = 0;
  /** Wall time minus monotonic time: set() moves it. */
  #wallOffsetMs: number;
  #nextId = 1;
  readonly #timers = new Map<number, ManualTimer>();
  /** Timers fired so far, for tests that count ticks. */
  fired = 0;

  constructor(start: Date | string | number = '2026-01-01T00:00:00.000Z') {
    this.#wallOffsetMs = new Date(start).getTime();
    if (Number.isNaN(this.#wallOffsetMs)) throw new Error(`ManualClock: not a time: ${String(start)}`);
  }

  now(): Date {
    return new Date(this.#monoMs + this.#wallOffsetMs);
  }

  monotonicMs(): number {
    return this.#monoMs;
  }

  setTimeout(callback: () => unknown, delayMs: number): ClockTimer {
    return this.#arm(callback, nodeDelay(delayMs), undefined);
  }

  setInterval(callback: () => unknown, intervalMs: number): ClockTimer {
    const every = nodeDelay(intervalMs);
    return this.#arm(callback, every, every);
  }

  clearTimeout(timer: ClockTimer | null | undefined): void {
    if (timer instanceof ManualTimer) this.#timers.delete(timer.id);
  }

  clearInterval(timer: ClockTimer | null | undefined): void {
    this.clearTimeout(timer);
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepOn(this, ms, signal);
  }

  /** Timers waiting to fire. */
  get pendingTimers(): number {
    return this.#timers.size;
  }

  /** Milliseconds until the next timer falls due; undefined when none waits. */
  peek(): number | undefined {
    const next = this.#next();
    return next === undefined ? undefined : next.dueMs - this.#monoMs;
  }

  /**
   * Moves time forward by `ms`, firing every timer that falls due on the way at its due time, one at a
   * time, awaiting the promise each callback returns. A callback's rejection rejects advance().
   * Timers armed by a callback fire in the same advance when they fall due within it.
   */
  async advance(ms: number): Promise<void> {
    if (!Number.isFinite(ms) || ms < 0) throw new Error(`ManualClock.advance: ${ms} is not a duration`);
    const targetMs = this.#monoMs + ms;
    for (let fires = 0; ; fires += 1) {
      const next = this.#next();
      if (next === undefined || next.dueMs > targetMs) break;
      if (fires >= FIRES_PER_ADVANCE_MAX) throw new Error(`ManualClock.advance: more than ${FIRES_PER_ADVANCE_MAX} timers fired`);
      await this.#fire(next);
    }
    this.#monoMs = targetMs;
  }

  /** Moves time to the next timer and fires it (and others due at that instant); returns the ms moved, undefined when none waits. */
  async advanceToNext(): Promise<number | undefined> {
    const waitMs = this.peek();
    if (waitMs === undefined) return undefined;
    await this.advance(waitMs);
    return waitMs;
  }

  /** Steps the wall clock to `to` without firing anything (a clock stepped by NTP, forwards or backwards). */
  set(to: Date | string | number): void {
    const ms = new Date(to).getTime();
    if (Number.isNaN(ms)) throw new Error(`ManualClock.set: not a time: ${String(to)}`);
    // Timers measure durations, not wall time: they are due on the monotonic clock and stay the same distance away.
    this.#wallOffsetMs = ms - this.#monoMs;
  }

  #arm(callback: () => unknown, delayMs: number, intervalMs: number | undefined): ManualTimer {
    const timer = new ManualTimer(this.#nextId++, this.#monoMs + delayMs, callback, intervalMs);
    this.#timers.set(timer.id, timer);
    return timer;
  }

  /** The earliest due timer; among equals, the one armed first. */
  #next(): ManualTimer | undefined {
    let next: ManualTimer | undefined;
    for (const timer of this.#timers.values()) {
      if (next === undefined || timer.dueMs < next.dueMs || (timer.dueMs === next.dueMs && timer.id < next.id)) next = timer;
    }
    return next;
  }

  async #fire(timer: ManualTimer): Promise<void> {
    this.#monoMs = Math.max(this.#monoMs, timer.dueMs);
    if (timer.intervalMs === undefined) this.#timers.delete(timer.id);
    else timer.dueMs += timer.intervalMs;
    this.fired += 1;
    await timer.callback();
  }
}
