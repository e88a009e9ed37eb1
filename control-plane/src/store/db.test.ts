import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestStore, DIALECTS, type TestStore } from '../testing/stores.js';

describe.each(DIALECTS)('store on %s', (dialect) => {
  let store: TestStore;
  beforeAll(async () => {
    store = await createTestStore(dialect);
  });
  afterAll(async () => {
    await store.destroy();
  });

  it('returns integers as bigint on every dialect', async () => {
    const row = await sql<{ n: bigint }>`select 9007199254740993 as n`.execute(store.db);
    expect(row.rows[0]?.n).toBe(9007199254740993n);
  });

  it('has the foundation tables', async () => {
    await store.db
      .insertInto('audit_log')
      .values({ id: 'a', at: '2026-01-01T00:00:00.000Z', actor_account_id: null, action: 'test', subject: null, detail: '{}' })
      .execute();
    const rows = await store.db.selectFrom('audit_log').selectAll().execute();
    expect(rows).toHaveLength(1);
  });
});
