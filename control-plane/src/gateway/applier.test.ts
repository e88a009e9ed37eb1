import { randomUUID } from 'node:crypto';
import type { TelemetryMessage } from '@ark/shared';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../clock.js';
import { createTestStore, DIALECTS, type TestStore } from '../testing/stores.js';
import { GroupApplier } from './applier.js';
import { markMessagesApplied, openChannelState } from '../store/channel-state.js';
import { ChannelHandlers } from './handlers.js';

const telemetry = (id: number): TelemetryMessage => ({
  v: 1,
  t: 'telemetry',
  sid: 's',
  seq: id + 1,
  id,
  samples: [{ at: '2026-01-01T00:00:00.000Z', devices: [] }],
});

describe.each(DIALECTS)('group applier on %s', (dialect) => {
  let store: TestStore;
  let handlers: ChannelHandlers;
  beforeEach(async () => {
    store = await createTestStore(dialect);
    handlers = new ChannelHandlers();
  });
  afterEach(async () => {
    await store.destroy();
  });

  it('applies messages that arrive together in one transaction, each once', async () => {
    const seen: Array<[string, number]> = [];
    const transactions = new Set<unknown>();
    handlers.on('telemetry', async (trx, machineId, msg) => {
      transactions.add(trx);
      seen.push([machineId, msg.id]);
    });
    const applier = new GroupApplier({ store, handlers, clock: systemClock });
    const machines = Array.from({ length: 10 }, () => randomUUID());
    // The first starts a transaction at once (on Postgres, the first two, one per lane); the rest queued behind
    // them share the next ones (groups of at most 64 on SQLite, 256 on Postgres).
    await Promise.all(machines.map((m) => applier.apply(m, telemetry(1))));
    expect(seen).toHaveLength(10);
    expect(transactions.size).toBe(dialect === 'sqlite' ? 2 : 3);
    // Duplicates are acknowledged without running the handler again.
    await Promise.all(machines.map((m) => applier.apply(m, telemetry(1))));
    expect(seen).toHaveLength(10);
    for (const m of machines) expect((await openChannelState(store.db, m)).lastAppliedMsgId).toBe(1);
    await applier.idle();
  });

  it('fails only the message whose handler throws; the rest of its group commits', async () => {
    const bad = randomUUID();
    const good = [randomUUID(), randomUUID(), randomUUID()];
    handlers.on('telemetry', async (_trx, machineId) => {
      if (machineId === bad) throw new Error('handler failed');
    });
    const applier = new GroupApplier({ store, handlers, clock: systemClock });
    const first = applier.apply(randomUUID(), telemetry(1));
    const results = await Promise.allSettled([first, applier.apply(bad, telemetry(1)), ...good.map((m) => applier.apply(m, telemetry(1)))]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'fulfilled']);
    expect((await openChannelState(store.db, bad)).lastAppliedMsgId).toBe(0);
    for (const m of good) expect((await openChannelState(store.db, m)).lastAppliedMsgId).toBe(1);
  });
});

describe('group marks on postgres', () => {
  let store: TestStore;
  beforeEach(async () => {
    store = await createTestStore('postgres');
  });
  afterEach(async () => {
    await store.destroy();
  });

  it('answers for each message what marking it alone, in order, would answer', async () => {
    const [known, fresh] = [randomUUID(), randomUUID()].sort() as [string, string];
    const now = new Date('2026-01-01T00:00:00Z');
    await store.db.transaction().execute((trx) => markMessagesApplied(trx, [{ machineId: known, id: 4 }], now));
    const messages = [
      { machineId: known, id: 3 },
      { machineId: known, id: 4 },
      { machineId: known, id: 5 },
      { machineId: known, id: 7 },
      { machineId: fresh, id: 1 },
      { machineId: fresh, id: 2 },
    ];
    const applied = await store.db.transaction().execute((trx) => markMessagesApplied(trx, messages, now));
    expect(applied).toEqual([false, false, true, true, true, true]);
    expect((await openChannelState(store.db, known)).lastAppliedMsgId).toBe(7);
    expect((await openChannelState(store.db, fresh)).lastAppliedMsgId).toBe(2);
    // The same group again: all applied already.
    expect(await store.db.transaction().execute((trx) => markMessagesApplied(trx, messages, now))).toEqual(messages.map(() => false));
  });
});
