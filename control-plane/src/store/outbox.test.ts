import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openChannelState } from './channel-state.js';
import { createTestStore, DIALECTS, type TestStore } from '../testing/stores.js';
import {
  acknowledgeCommands,
  commandsAfter,
  machinesWithPendingCommands,
  type OutboxWriter,
  outboxWakeups,
  outboxWriter,
} from './outbox.js';

const now = new Date('2026-01-01T00:00:00.000Z');

describe.each(DIALECTS)('agent outbox on %s', (dialect) => {
  let store: TestStore;
  let outbox: OutboxWriter;
  beforeEach(async () => {
    store = await createTestStore(dialect);
    outbox = outboxWriter();
  });
  afterEach(async () => {
    await store.destroy();
  });

  const goLive = (machineId: string, go_live = true) =>
    outbox.enqueue(store.db, { machineId, kind: 'update_go_live', body: { go_live }, now });

  it('numbers commands per machine from 1 without gaps', async () => {
    const a = randomUUID();
    const b = randomUUID();
    expect((await goLive(a)).commandSeq).toBe(1);
    expect((await goLive(a)).commandSeq).toBe(2);
    expect((await goLive(b)).commandSeq).toBe(1);
    expect((await goLive(a, false)).commandSeq).toBe(3);
    const commands = await commandsAfter(store.db, a, 0, 10);
    expect(commands.map((c) => [c.commandSeq, c.kind, c.body])).toEqual([
      [1, 'update_go_live', { go_live: true }],
      [2, 'update_go_live', { go_live: true }],
      [3, 'update_go_live', { go_live: false }],
    ]);
    expect(await commandsAfter(store.db, a, 1, 1)).toHaveLength(1);
    expect((await commandsAfter(store.db, a, 1, 1))[0]?.commandSeq).toBe(2);
  });

  it('queues nothing, and uses no number, when the caller transaction rolls back', async () => {
    const machineId = randomUUID();
    await expect(
      store.db.transaction().execute(async (trx) => {
        await outbox.enqueue(trx, { machineId, kind: 'update_go_live', body: { go_live: true }, now });
        throw new Error('caller failed');
      }),
    ).rejects.toThrow('caller failed');
    expect(await commandsAfter(store.db, machineId, 0, 10)).toEqual([]);
    expect((await goLive(machineId)).commandSeq).toBe(1);
  });

  it('keeps numbers unique and gapless under concurrent enqueues', async () => {
    const machineId = randomUUID();
    const results = await Promise.all(
      Array.from({ length: 20 }, () =>
        store.db.transaction().execute((trx) => outbox.enqueue(trx, { machineId, kind: 'update_go_live', body: { go_live: true }, now })),
      ),
    );
    expect(results.map((r) => r.commandSeq).sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(new Set(results.map((r) => r.commandId)).size).toBe(20);
  });

  it('refuses a body the agent would refuse', async () => {
    await expect(
      outbox.enqueue(store.db, { machineId: randomUUID(), kind: 'update_go_live', body: { go_live: 'yes' } as never, now }),
    ).rejects.toThrow(/invalid update_go_live command body/);
    await expect(outbox.enqueue(store.db, { machineId: randomUUID(), kind: 'nope' as never, body: {} as never, now })).rejects.toThrow(
      /unknown command kind/,
    );
  });

  it('wakes in-process listeners with the machine id', async () => {
    const machineId = randomUUID();
    const woken: string[] = [];
    const listener = (id: string) => woken.push(id);
    outboxWakeups.on('enqueued', listener);
    try {
      await goLive(machineId);
      await new Promise((resolve) => setImmediate(resolve));
      expect(woken).toContain(machineId);
    } finally {
      outboxWakeups.off('enqueued', listener);
    }
  });

  it('records cumulative acknowledgements, never backwards and never past the last queued command', async () => {
    const machineId = randomUUID();
    await goLive(machineId);
    await goLive(machineId);
    await goLive(machineId);
    expect(await machinesWithPendingCommands(store.db)).toEqual([{ machineId, maxSeq: 3 }]);
    expect(await acknowledgeCommands(store.db, machineId, 2, now)).toBe(2);
    expect(await acknowledgeCommands(store.db, machineId, 1, now)).toBe(2);
    expect(await machinesWithPendingCommands(store.db)).toEqual([{ machineId, maxSeq: 3 }]);
    expect(await acknowledgeCommands(store.db, machineId, 99, now)).toBe(3);
    expect((await openChannelState(store.db, machineId)).commandsAckedUpto).toBe(3);
    expect(await machinesWithPendingCommands(store.db)).toEqual([]);
    // A later command is still pending: the over-claim did not swallow it.
    await goLive(machineId);
    expect(await machinesWithPendingCommands(store.db)).toEqual([{ machineId, maxSeq: 4 }]);
    expect(await acknowledgeCommands(store.db, randomUUID(), 5, now)).toBe(0);
  });
});
