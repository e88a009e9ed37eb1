import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestStore, DIALECTS, type TestStore } from '../testing/stores.js';
import { markMessageApplied, openChannelState } from './channel-state.js';

const now = new Date('2026-01-01T00:00:00.000Z');

describe.each(DIALECTS)('agent channel state on %s', (dialect) => {
  let store: TestStore;
  beforeEach(async () => {
    store = await createTestStore(dialect);
  });
  afterEach(async () => {
    await store.destroy();
  });

  it('reads zeros before the first message, creates the row with it, and marks each message id applied once', async () => {
    const machineId = randomUUID();
    expect(await openChannelState(store.db, machineId)).toEqual({ lastAppliedMsgId: 0, commandsAckedUpto: 0, lastCommandSeq: 0 });
    expect(await store.db.selectFrom('agent_channel_state').selectAll().execute()).toEqual([]);
    expect(await markMessageApplied(store.db, machineId, 1, now)).toBe(true);
    expect(await markMessageApplied(store.db, machineId, 1, now)).toBe(false);
    expect(await markMessageApplied(store.db, machineId, 5, now)).toBe(true);
    expect(await markMessageApplied(store.db, machineId, 3, now)).toBe(false);
    expect((await openChannelState(store.db, machineId)).lastAppliedMsgId).toBe(5);
  });

  it('lets exactly one of two racing transactions apply the same id, also when the row does not exist yet', async () => {
    const machineId = randomUUID();
    const outcomes = await Promise.all(
      [0, 1].map(() =>
        store.db.transaction().execute(async (trx) => {
          const fresh = await markMessageApplied(trx, machineId, 7, now);
          await new Promise((resolve) => setTimeout(resolve, 20));
          return fresh;
        }),
      ),
    );
    expect(outcomes.sort()).toEqual([false, true]);
  });
});
