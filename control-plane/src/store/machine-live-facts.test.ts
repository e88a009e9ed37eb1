import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { storeEnrollmentToken } from '../testing/credentials.js';
import { createTestStore, DIALECTS, type TestStore } from '../testing/stores.js';
import { insertAccount } from './accounts.js';
import { MachineLiveFactsReader } from './machine-live-facts.js';
import { insertMachine } from './machines.js';

// The batched read heartbeats are judged against: every caller gets its own machine's row, read after it asked,
// and callers arriving together share one query.

const t0 = new Date('2026-01-01T00:00:00.000Z');

describe.each(DIALECTS)('machine live facts reader on %s', (dialect) => {
  let store: TestStore;
  let machines: string[];
  let queries: number;

  beforeEach(async () => {
    store = await createTestStore(dialect);
    const account = await insertAccount(store.db, {
      email: `host-${randomUUID()}@example.test`,
      passwordHash: null,
      name: null,
      role: 'host',
      emailVerified: true,
      now: t0,
    });
    machines = [];
    for (let i = 0; i < 5; i++) {
      const token = await storeEnrollmentToken(store.db, { accountId: account.id, pairingId: null, goLive: i % 2 === 0, now: t0 });
      const machine = await insertMachine(store.db, {
        id: randomUUID(),
        ownerAccountId: account.id,
        publicKey: `key-${i}`,
        manifest: {
          hostname: `rig-${i}`,
          gpus: [],
          cpu: { model: 'cpu', cores: 1 },
          ram_bytes: '1',
          disk_bytes: '1',
          os: 'linux',
          agent_version: '0.1.0',
        },
        goLive: i % 2 === 0,
        enrollmentTokenId: token.id,
        pairingId: null,
        now: t0,
      });
      machines.push(machine.id);
    }
    queries = 0;
    // Count the reader's queries by wrapping the store's select on machines.
    const selectFrom = store.db.selectFrom.bind(store.db);
    (store.db as { selectFrom: unknown }).selectFrom = (table: string) => {
      if (table === 'machines') queries += 1;
      return selectFrom(table as 'machines');
    };
  });

  afterEach(async () => {
    await store.destroy();
  });

  it('answers each caller with its own machine, and callers arriving together share a query', async () => {
    const reader = new MachineLiveFactsReader(store, { lingerMs: 5 });
    const unknown = randomUUID();
    const asked = [...machines, unknown, machines[0] as string];
    const rows = await Promise.all(asked.map((id) => reader.read(id)));
    expect(rows.map((row) => row?.id)).toEqual([...machines, undefined, machines[0]]);
    expect(rows.map((row) => row?.live_state)).toEqual(['waiting', 'off', 'waiting', 'off', 'waiting', undefined, 'waiting']);
    // The first caller's read starts at once; the rest arrived while it ran and went together.
    expect(queries).toBeLessThanOrEqual(2);
  });

  it('reads after the caller asked: a change committed before the call is seen', async () => {
    const reader = new MachineLiveFactsReader(store);
    const id = machines[1] as string;
    expect((await reader.read(id))?.live_state).toBe('off');
    await store.db.updateTable('machines').set({ live_state: 'waiting' }).where('id', '=', id).execute();
    expect((await reader.read(id))?.live_state).toBe('waiting');
  });

  it('fails every caller of a failed read, and the next read works again', async () => {
    const reader = new MachineLiveFactsReader(store);
    const selectFrom = store.db.selectFrom;
    (store.db as { selectFrom: unknown }).selectFrom = () => {
      throw new Error('store down');
    };
    await expect(Promise.all([reader.read(machines[0] as string), reader.read(machines[1] as string)])).rejects.toThrow('store down');
    (store.db as { selectFrom: unknown }).selectFrom = selectFrom;
    expect((await reader.read(machines[2] as string))?.id).toBe(machines[2]);
  });
});
