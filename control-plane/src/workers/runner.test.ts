import { describe, expect, it } from 'vitest';
import { ManualClock } from '../clock.js';
import type { Store } from '../store/db.js';
import { startWorkers, type Worker } from './runner.js';

// The runner on a manual clock: every wait is one of the clock's timers, so these tests advance time and never
// sleep. The runner only hands the store to the steps; these steps do not read it.
const store = {} as Store;

function recorder() {
  const lines: string[] = [];
  return {
    lines,
    logger: {
      info: (obj: object, msg: string) => lines.push(`${msg} ${JSON.stringify(obj)}`),
      error: (obj: object, msg: string) => lines.push(`${msg} ${(obj as { err: Error }).err.message}`),
    },
  };
}

describe('the workers runner on a manual clock', () => {
  it("runs each step every interval at the clock's time, each worker on its own interval", async () => {
    const clock = new ManualClock('2026-01-01T00:00:00.000Z');
    const seen: string[] = [];
    const worker = (name: string, intervalMs: number): Worker => ({
      name,
      intervalMs,
      step: async (given, now) => {
        expect(given).toBe(store);
        seen.push(`${name}@${now.toISOString().slice(11, 23)}`);
        return 0;
      },
    });
    const { logger, lines } = recorder();
    const runner = startWorkers({ store, clock, logger, workers: [worker('fast', 1_000), worker('slow', 2_500)] });
    expect(clock.pendingTimers).toBe(2);
    await clock.advance(999);
    expect(seen).toEqual([]);
    await clock.advance(1);
    expect(seen).toEqual(['fast@00:00:01.000']);
    await clock.advance(4_000);
    expect(seen).toEqual([
      'fast@00:00:01.000',
      'fast@00:00:02.000',
      'slow@00:00:02.500',
      'fast@00:00:03.000',
      'fast@00:00:04.000',
      'slow@00:00:05.000',
      'fast@00:00:05.000',
    ]);
    // A step that changes nothing logs nothing.
    expect(lines).toEqual([]);
    await runner.stop();
    expect(clock.pendingTimers).toBe(0);
    await clock.advance(60_000);
    expect(seen).toHaveLength(7);
  });

  it('waits its interval after a slow step ends, so a step never overlaps itself, and logs what it did', async () => {
    const clock = new ManualClock(0);
    let release: () => void = () => {};
    let running = 0;
    let overlapped = false;
    const starts: number[] = [];
    const slow: Worker = {
      name: 'slow',
      intervalMs: 1_000,
      step: async () => {
        running += 1;
        overlapped ||= running > 1;
        starts.push(clock.monotonicMs());
        await new Promise<void>((resolve) => {
          release = resolve;
        });
        running -= 1;
        return 2;
      },
    };
    const { logger, lines } = recorder();
    const runner = startWorkers({ store, clock, logger, workers: [slow] });
    const advancing = clock.advance(1_000);
    await until(() => starts.length === 1);
    // While the step runs no timer waits: the next one is armed only when it ends.
    expect(clock.pendingTimers).toBe(0);
    release();
    await advancing;
    expect(clock.peek()).toBe(1_000);
    // No clock time passed while it ran.
    expect(lines).toEqual(['worker step {"worker":"slow","result":2,"ms":0}']);
    const second = clock.advance(1_000);
    await until(() => starts.length === 2);
    release();
    await second;
    expect(starts).toEqual([1_000, 2_000]);
    expect(overlapped).toBe(false);
    await runner.stop();
  });

  it('logs a failing step and runs it again at the next interval', async () => {
    const clock = new ManualClock(0);
    let calls = 0;
    const flaky: Worker = {
      name: 'flaky',
      intervalMs: 10_000,
      step: async () => {
        calls += 1;
        if (calls === 1) throw new Error('store unavailable');
        return 1;
      },
    };
    const { logger, lines } = recorder();
    const runner = startWorkers({ store, clock, logger, workers: [flaky] });
    await clock.advance(10_000);
    expect(lines).toEqual(['worker step failed store unavailable']);
    expect(clock.peek()).toBe(10_000);
    await clock.advance(10_000);
    expect(calls).toBe(2);
    expect(lines[1]).toMatch(/^worker step \{"worker":"flaky","result":1/);
    await runner.stop();
  });

  it('stop() waits for a running step and schedules nothing after it; schedule: false arms nothing', async () => {
    const clock = new ManualClock(0);
    let release: () => void = () => {};
    let started = 0;
    let finished = 0;
    const worker: Worker = {
      name: 'w',
      intervalMs: 100,
      step: async () => {
        started += 1;
        await new Promise<void>((resolve) => {
          release = resolve;
        });
        finished += 1;
      },
    };
    const runner = startWorkers({ store, clock, logger: recorder().logger, workers: [worker] });
    const advancing = clock.advance(100);
    await until(() => started === 1);
    let stopped = false;
    const stopping = runner.stop().then(() => {
      stopped = true;
    });
    await until(() => true);
    expect(stopped).toBe(false);
    release();
    await stopping;
    await advancing;
    expect(finished).toBe(1);
    expect(clock.pendingTimers).toBe(0);

    const manual = startWorkers({ store, clock, logger: recorder().logger, workers: [worker], schedule: false });
    expect(clock.pendingTimers).toBe(0);
    const once = manual.runOnce();
    await until(() => started === 2);
    release();
    await once;
    expect(finished).toBe(2);
    await manual.stop();
  });
});

/** Lets pending promise callbacks and I/O run until `probe` holds (no clock time passes). */
async function until(probe: () => boolean): Promise<void> {
  for (let i = 0; i < 1_000; i++) {
    if (probe()) return;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error('condition not met');
}
