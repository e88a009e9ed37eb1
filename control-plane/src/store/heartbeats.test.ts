import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../clock.js';
import { insertHostMachines } from '../testing/hosting.js';
import { createTestStore, DIALECTS, type TestStore } from '../testing/stores.js';
import { HeartbeatBuffer } from './heartbeats.js';

// The write-behind buffer on its own; services/hosting/heartbeats.test.ts covers which heartbeats go through it.

const t0 = new Date('2026-01-01T00:00:00.000Z');
const at = (s: number) => new Date(t0.getTime() + s * 1000);

describe.each(DIALECTS)('heartbeat buffer on %s', (dialect) => {
  let store: TestStore;
  let buffer: HeartbeatBuffer;
  let clock: ManualClock;
  let machines: string[];

  beforeEach(async () => {
    store = await createTestStore(dialect);
    // Flushed by its timer only when a test advances the clock; otherwise every write is the test's own flush.
    clock = new ManualClock(t0);
    buffer = new HeartbeatBuffer(store, clock, { flushIntervalMs: 1_000, chunkRows: 2 });
    machines = await insertHostMachines(store.db, 3, { now: t0 });
  });
  afterEach(async () => {
    await buffer.close();
    await store.destroy();
  });

  const stored = async (id: string) =>
    await store.db.selectFrom('machines').select(['last_heartbeat_at', 'uptime_s']).where('id', '=', id).executeTakeFirstOrThrow();

  it('keeps the latest heartbeat per machine and writes them all in one flush, in chunks', async () => {
    for (const id of machines) {
      await buffer.add(id, at(15), 15n);
      await buffer.add(id, at(30), 30n);
      // An older one arriving late does not replace a newer one.
      await buffer.add(id, at(20), 20n);
    }
    expect(buffer.size).toBe(3);
    for (const id of machines) {
      expect((await stored(id)).last_heartbeat_at).toBeNull();
      expect(buffer.lastHeartbeatAt(id, null)).toBe(at(30).toISOString());
    }
    expect(await buffer.flush()).toBe(3);
    expect(buffer.size).toBe(0);
    for (const id of machines) expect(await stored(id)).toEqual({ last_heartbeat_at: at(30).toISOString(), uptime_s: 30n });
    expect(await buffer.flush()).toBe(0);
  });

  it('never moves last-seen backwards, and reads the newer of stored and buffered', async () => {
    const [id] = machines as [string];
    await buffer.add(id, at(60), 60n);
    await buffer.flush();
    await buffer.add(id, at(45), 45n);
    expect(buffer.lastHeartbeatAt(id, at(60).toISOString())).toBe(at(60).toISOString());
    expect(await buffer.flush()).toBe(0);
    expect((await stored(id)).last_heartbeat_at).toBe(at(60).toISOString());
    buffer.forget(id);
    expect(buffer.pendingAt(id)).toBeUndefined();
  });

  it('writes what it holds once per interval of its clock, arms nothing while empty, and stops on close', async () => {
    const [id] = machines as [string];
    expect(clock.pendingTimers).toBe(0);
    await buffer.add(id, at(15), 15n);
    expect(clock.peek()).toBe(1_000);
    await clock.advance(999);
    expect((await stored(id)).last_heartbeat_at).toBeNull();
    // advance() waits for the flush the timer started.
    await clock.advance(1);
    expect(buffer.size).toBe(0);
    expect(await stored(id)).toEqual({ last_heartbeat_at: at(15).toISOString(), uptime_s: 15n });
    await buffer.add(id, at(30), 30n);
    await clock.advance(1_000);
    expect((await stored(id)).last_heartbeat_at).toBe(at(30).toISOString());
    await buffer.close();
    expect(clock.pendingTimers).toBe(0);
    // After close nothing waits for a timer: a late heartbeat is written at once.
    await buffer.add(id, at(45), 45n);
    expect((await stored(id)).last_heartbeat_at).toBe(at(45).toISOString());
  });
});
