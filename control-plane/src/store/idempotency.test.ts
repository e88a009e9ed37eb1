import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestStore, DIALECTS, type TestStore } from '../testing/stores.js';
import { transact } from './transaction.js';
import {
  findStoredAnswer,
  IDEMPOTENCY_RETENTION_MS,
  insertStoredAnswers,
  purgeIdempotencyKeys,
  type StoredAnswer,
  storedAnswerInserter,
} from './idempotency.js';
import { isUniqueViolation } from './db.js';

const now = new Date('2026-06-01T12:00:00.000Z');
const ago = (ms: number) => new Date(now.getTime() - ms).toISOString();

const answer = (key: string, createdAt: string): StoredAnswer => ({
  principal: 'account-1',
  route: 'POST /api/v1/things',
  key,
  request_hash: 'a'.repeat(64),
  state: 'done',
  status_code: 201n,
  response_body: 'plain:{}',
  locked_until: createdAt,
  created_at: createdAt,
});

const keysOf = async (store: TestStore) =>
  (await sql<{ key: string }>`select key from idempotency_keys`.execute(store.db)).rows.map((row) => row.key).sort();

describe.each(DIALECTS)('stored idempotent answers on %s', (dialect) => {
  let store: TestStore;
  beforeEach(async () => {
    store = await createTestStore(dialect);
  });
  afterEach(async () => {
    await store.destroy();
  });

  it('purges every answer past the retention, in batches, and keeps the rest', async () => {
    const old = Array.from({ length: 23 }, (_, i) =>
      answer(`old-${String(i).padStart(2, '0')}`, ago(IDEMPOTENCY_RETENTION_MS + 60_000 - i)),
    );
    const fresh = Array.from({ length: 5 }, (_, i) => answer(`fresh-${i}`, ago(IDEMPOTENCY_RETENTION_MS - 60_000 + i)));
    await insertStoredAnswers(store.db, old);
    await insertStoredAnswers(store.db, fresh);
    // Batches of 4: 23 old answers take six of them, the last one partly full.
    expect(await purgeIdempotencyKeys(store, now, { batch: 4 })).toBe(23);
    expect(await keysOf(store)).toEqual(fresh.map((row) => row.key).sort());
    // Nothing left to purge: a second run deletes nothing and keeps the fresh answers.
    expect(await purgeIdempotencyKeys(store, now, { batch: 4 })).toBe(0);
    expect(await keysOf(store)).toHaveLength(5);
    // Once they age out, they go too.
    expect(await purgeIdempotencyKeys(store, new Date(now.getTime() + 120_000))).toBe(5);
    expect(await keysOf(store)).toEqual([]);
  });

  it('never purges an answer inside the retention, whatever order the answers were stored in', async () => {
    // A wall clock that stepped back: a fresh answer stored between old ones.
    await insertStoredAnswers(store.db, [answer('old-1', ago(IDEMPOTENCY_RETENTION_MS + 1))]);
    await insertStoredAnswers(store.db, [answer('fresh-1', ago(1_000))]);
    await insertStoredAnswers(store.db, [answer('old-2', ago(IDEMPOTENCY_RETENTION_MS + 2))]);
    await insertStoredAnswers(store.db, [answer('exactly-at-cutoff', ago(IDEMPOTENCY_RETENTION_MS))]);
    const deleted = await purgeIdempotencyKeys(store, now, { batch: 2 });
    const left = await keysOf(store);
    expect(left).toContain('fresh-1');
    expect(left).toContain('exactly-at-cutoff');
    expect(left).not.toContain('old-1');
    expect(deleted).toBe(4 - left.length);
    // The late old answer goes once the answers stored before it have aged out.
    expect(await purgeIdempotencyKeys(store, new Date(now.getTime() + IDEMPOTENCY_RETENTION_MS))).toBe(left.length);
    expect(await keysOf(store)).toEqual([]);
  });

  it.runIf(dialect === 'sqlite')('inserts an answer synchronously inside the transaction it commits with, and only there', async () => {
    const insert = storedAnswerInserter(store);
    if (!insert) throw new Error('a SQLite store has a synchronous inserter');
    const key = randomUUID();
    // Outside a transaction it refuses: it would commit on its own.
    expect(() => insert(answer(key, now.toISOString()))).toThrow(/inside a transaction/);
    // Rolled back with its transaction.
    await expect(
      transact(
        store,
        async () => 'effect',
        async () => {
          insert(answer(key, now.toISOString()));
          throw new Error('effect failed after the answer');
        },
      ),
    ).rejects.toThrow('effect failed after the answer');
    expect(await findStoredAnswer(store.db, { principal: 'account-1', route: 'POST /api/v1/things', key })).toBeUndefined();
    // Committed with it.
    await transact(
      store,
      async () => 'effect',
      async () => insert(answer(key, now.toISOString())),
    );
    const stored = await findStoredAnswer(store.db, { principal: 'account-1', route: 'POST /api/v1/things', key });
    expect(stored?.status_code).toBe(201n);
    expect(stored?.response_body).toBe('plain:{}');
    // A second answer for the key is a unique violation, as through Kysely.
    const twin = transact(
      store,
      async () => 'effect',
      async () => insert(answer(key, now.toISOString())),
    );
    await expect(twin).rejects.toSatisfy(isUniqueViolation);
  });

  it.runIf(dialect === 'sqlite')('keeps no created_at index on SQLite (one page less per stored answer)', async () => {
    const indexes = await sql<{
      name: string;
    }>`select name from sqlite_master where type = 'index' and tbl_name = 'idempotency_keys'`.execute(store.db);
    expect(indexes.rows.map((row) => row.name)).not.toContain('idempotency_keys_created_at');
    // The primary key's own index answers lookups.
    expect(indexes.rows).toHaveLength(1);
  });
});
