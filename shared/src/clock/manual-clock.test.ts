import { describe, expect, it } from 'vitest';
import { systemClock } from './clock.js';
import { ManualClock } from './manual-clock.js';

describe('ManualClock', () => {
  it('reads the time it was set to, and moves only when advanced', async () => {
    const clock = new ManualClock('2030-01-01T00:00:00.000Z');
    expect(clock.now().toISOString()).toBe('2030-01-01T00:00:00.000Z');
    await clock.advance(1_500);
    expect(clock.now().toISOString()).toBe('2030-01-01T00:00:01.500Z');
  });

  it('fires each timer at its own due time, in due order, one tick at a time', async () => {
    const clock = new ManualClock(0);
    const seen: string[] = [];
    clock.setTimeout(() => seen.push(`b@${clock.now().getTime()}`), 200);
    clock.setTimeout(() => seen.push(`a@${clock.now().getTime()}`), 100);
    clock.setTimeout(() => seen.push(`c@${clock.now().getTime()}`), 200);
    await clock.advance(150);
    expect(seen).toEqual(['a@100']);
    expect(clock.now().getTime()).toBe(150);
    expect(clock.peek()).toBe(50);
    await clock.advance(50);
    expect(seen).toEqual(['a@100', 'b@200', 'c@200']);
    expect(clock.pendingTimers).toBe(0);
    expect(clock.peek()).toBeUndefined();
  });

  it('awaits the work a timer starts before the next one fires, and fires timers that work arms', async () => {
    const clock = new ManualClock(0);
    const seen: number[] = [];
    const tick = async () => {
      await new Promise((resolve) => setImmediate(resolve));
      seen.push(clock.now().getTime());
      clock.setTimeout(tick, 1_000);
    };
    clock.setTimeout(tick, 1_000);
    await clock.advance(3_500);
    expect(seen).toEqual([1_000, 2_000, 3_000]);
    expect(clock.peek()).toBe(500);
    expect(await clock.advanceToNext()).toBe(500);
    expect(seen.at(-1)).toBe(4_000);
  });

  it('repeats intervals until cleared, and forgets cleared timers', async () => {
    const clock = new ManualClock(0);
    let ticks = 0;
    const interval = clock.setInterval(() => {
      ticks += 1;
    }, 10);
    const never = clock.setTimeout(() => {
      throw new Error('cleared');
    }, 5);
    clock.clearTimeout(never);
    await clock.advance(35);
    expect(ticks).toBe(3);
    clock.clearInterval(interval);
    await clock.advance(100);
    expect(ticks).toBe(3);
    expect(clock.fired).toBe(3);
  });

  it('treats delays as Node does: below 1 ms or beyond 2^31-1 ms is 1 ms', async () => {
    const clock = new ManualClock(0);
    const seen: string[] = [];
    clock.setTimeout(() => seen.push('zero'), 0);
    clock.setTimeout(() => seen.push('huge'), 2 ** 31);
    await clock.advance(0);
    expect(seen).toEqual([]);
    await clock.advance(1);
    expect(seen).toEqual(['zero', 'huge']);
  });

  it('sleeps until advanced, or until its signal aborts', async () => {
    const clock = new ManualClock(0);
    let woke = false;
    const sleeping = clock.sleep(1_000).then(() => {
      woke = true;
    });
    await clock.advance(999);
    expect(woke).toBe(false);
    await clock.advance(1);
    await sleeping;
    expect(woke).toBe(true);
    const controller = new AbortController();
    const aborted = clock.sleep(60_000, controller.signal);
    controller.abort();
    await aborted;
    expect(clock.pendingTimers).toBe(0);
  });

  it('steps the wall clock without firing timers, which keep their distance, nor the monotonic reading', async () => {
    const clock = new ManualClock(10_000);
    let fired = false;
    clock.setTimeout(() => {
      fired = true;
    }, 100);
    const mono = clock.monotonicMs();
    clock.set(5_000);
    expect(clock.now().getTime()).toBe(5_000);
    expect(clock.monotonicMs()).toBe(mono);
    expect(clock.peek()).toBe(100);
    await clock.advance(100);
    expect(fired).toBe(true);
    expect(clock.now().getTime()).toBe(5_100);
    expect(clock.monotonicMs() - mono).toBe(100);
    clock.set('2040-01-01T00:00:00.000Z');
    await clock.advance(1);
    expect(clock.now().toISOString()).toBe('2040-01-01T00:00:00.001Z');
    expect(clock.monotonicMs() - mono).toBe(101);
  });

  it('starts at 2026-01-01 unless told otherwise', () => {
    expect(new ManualClock().now().toISOString()).toBe('2026-01-01T00:00:00.000Z');
  });

  it('does not sleep at all on a signal that already aborted', async () => {
    const clock = new ManualClock(0);
    await clock.sleep(60_000, AbortSignal.abort());
    expect(clock.pendingTimers).toBe(0);
  });

  it('rejects advance() with the error of a timer whose work failed', async () => {
    const clock = new ManualClock(0);
    clock.setTimeout(async () => {
      throw new Error('tick failed');
    }, 10);
    await expect(clock.advance(10)).rejects.toThrow('tick failed');
  });
});

describe('systemClock', () => {
  it('sleeps on real timers and wakes early when aborted', async () => {
    const started = Date.now();
    await systemClock.sleep(20);
    expect(Date.now() - started).toBeGreaterThanOrEqual(15);
    const controller = new AbortController();
    const long = systemClock.sleep(60_000, controller.signal);
    controller.abort();
    await long;
    expect(Math.abs(systemClock.now().getTime() - Date.now())).toBeLessThan(1_000);
    const mono = systemClock.monotonicMs();
    await systemClock.sleep(5);
    expect(systemClock.monotonicMs()).toBeGreaterThan(mono);
  });
});
