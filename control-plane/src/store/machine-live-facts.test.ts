import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { insertHostMachines } from '../testing/hosting.js';
import { createTestStore, DIALECTS, type TestStore } from '../testing/stores.js';
import { MachineLiveFactsReader } from './machine-live-facts.js';

// The read heartbeats are judged against: every caller gets its own machine's row, read after it asked; on
// PostgreSQL callers arriving together share one query.

const t0 = new Date('2026-01-01T00:00:00.000Z');

describe.each(DIALECTS)('machine live facts reader on %s', (dialect) => {
  let store: TestStore;
  let machines: string[];
  let queries: number;

  beforeEach(async () => {
    store = await createTestStore(dialect);
    machines = await insertHostMachines(store.db, 5, { now: t0, goLive: (i) => i % 2 === 0 });
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

  it('answers each caller with its own machine, and on PostgreSQL callers arriving together share a query', async () => {
    const reader = new MachineLiveFactsReader(store, { lingerMs: 5 });
    const unknown = randomUUID();
    const asked = [...machines, unknown, machines[0] as string];
    const rows = await Promise.all(asked.map((id) => reader.read(id)));
    expect(rows.map((row) => row?.id)).toEqual([...machines, undefined, machines[0]]);
    expect(rows.map((row) => row?.live_state)).toEqual(['waiting', 'off', 'waiting', 'off', 'waiting', undefined, 'waiting']);
    // The first caller's read starts at once; the rest arrived while it ran and went together. SQLite reads each
    // alone, in a statement built once in the process (at most that build is counted), not once a read.
    expect(queries).toBeLessThanOrEqual(dialect === 'postgres' ? 2 : 1);
  });

  it('reads after the caller asked: a change committed before the call is seen', async () => {
    const reader = new MachineLiveFactsReader(store);
    const id = machines[1] as string;
    expect((await reader.read(id))?.live_state).toBe('off');
    await store.db.updateTable('machines').set({ live_state: 'waiting' }).where('id', '=', id).execute();
    expect((await reader.read(id))?.live_state).toBe('waiting');
  });

  it('never sees a change of a transaction still open: a read during it answers what is committed', async () => {
    const reader = new MachineLiveFactsReader(store);
    const id = machines[1] as string;
    let during: Promise<unknown> | undefined;
    await expect(
      store.db.transaction().execute(async (trx) => {
        await trx.updateTable('machines').set({ live_state: 'live' }).where('id', '=', id).execute();
        // On SQLite the store's one connection is inside this transaction: the read must wait, not read through it.
        during = reader.read(id);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(((await during) as { live_state?: string } | undefined)?.live_state).toBe('off');
  });

  it('fails every caller of a failed read, and the next read works again', async () => {
    const reader = new MachineLiveFactsReader(store);
    expect((await reader.read(machines[0] as string))?.id).toBe(machines[0]);
    // The table gone for a moment: a real failure of the store, on both dialects.
    await sql`alter table machines rename to machines_away`.execute(store.db);
    await expect(Promise.all([reader.read(machines[0] as string), reader.read(machines[1] as string)])).rejects.toThrow(/machines/);
    await sql`alter table machines_away rename to machines`.execute(store.db);
    expect((await reader.read(machines[2] as string))?.id).toBe(machines[2]);
  });
});
