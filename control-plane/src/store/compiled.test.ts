import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createTestStore, DIALECTS, type TestStore } from '../testing/stores.js';
import { bothDialects, compiledOnce, rowsStatement, runSql } from './compiled.js';
import { inTransactionWithRetry } from './transaction.js';

// Statements compiled once must behave exactly as the builder's statement each call would: each call's own
// arguments, constants kept, an argument used twice bound twice, the dialect's own SQL, and a builder that does not
// pass its arguments through whole refused at once instead of running with a stand-in.

describe.each(DIALECTS)('statements compiled once on %s', (dialect) => {
  let store: TestStore;

  beforeEach(async () => {
    store = await createTestStore(dialect);
  });

  afterEach(async () => {
    await store.destroy();
  });

  /** The settings rows whose key starts with `prefix`, in key order. */
  const settingsLike = (prefix: string) =>
    store.db.selectFrom('settings').select(['key', 'value']).where('key', 'like', `${prefix}%`).orderBy('key').execute();

  it('binds each call its own arguments, reuses an argument wherever it goes, and keeps constants', async () => {
    const upsert = compiledOnce((db, key: string, value: string, at: string) =>
      db
        .insertInto('settings')
        .values({ key, value, updated_at: at })
        .onConflict((oc) => oc.column('key').doUpdateSet({ value, updated_at: at })),
    );
    const read = compiledOnce((db, key: string) => db.selectFrom('settings').select(['key', 'value', 'updated_at']).where('key', '=', key));
    const key = `k-${randomUUID()}`;
    await upsert(store.db, key, '"one"', '2026-01-01T00:00:00.000Z');
    await upsert(store.db, key, '"two"', '2026-01-02T00:00:00.000Z');
    await upsert(store.db, `${key}-other`, '"three"', '2026-01-03T00:00:00.000Z');
    expect((await read(store.db, key)).rows).toEqual([{ key, value: '"two"', updated_at: '2026-01-02T00:00:00.000Z' }]);
    expect((await read(store.db, `${key}-other`)).rows[0]?.value).toBe('"three"');
    expect((await read(store.db, 'absent')).rows).toEqual([]);

    // A constant compiled in stays, whatever the call's arguments.
    const readMatching = compiledOnce((db, key: string) =>
      db.selectFrom('settings').select('key').where('key', '=', key).where('value', '=', '"two"'),
    );
    expect((await readMatching(store.db, key)).rows).toEqual([{ key }]);
    expect((await readMatching(store.db, `${key}-other`)).rows).toEqual([]);
  });

  it('runs inside the caller transaction, and rolls back with it', async () => {
    const insert = compiledOnce((db, key: string) => db.insertInto('settings').values({ key, value: '1', updated_at: 'now' }));
    const key = `tx-${randomUUID()}`;
    await expect(
      store.db.transaction().execute(async (trx) => {
        await insert(trx, key);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(await store.db.selectFrom('settings').select('key').where('key', '=', key).execute()).toEqual([]);
  });

  it('inside a use case transaction (run at once on SQLite) answers as Kysely does, sees its own writes and rolls back with it', async () => {
    const upsert = compiledOnce((db, key: string, value: string) =>
      db
        .insertInto('settings')
        .values({ key, value, updated_at: 'now' })
        .onConflict((oc) => oc.column('key').doUpdateSet({ value }).where('settings.value', '<', value)),
    );
    const read = compiledOnce((db, key: string) => db.selectFrom('settings').select('value').where('key', '=', key));
    const key = `use-case-${randomUUID()}`;
    const counts = await inTransactionWithRetry(store, async (trx) => {
      const first = await upsert(trx, key, '1');
      const moved = await upsert(trx, key, '2');
      const stayed = await upsert(trx, key, '0');
      expect((await read(trx, key)).rows).toEqual([{ value: '2' }]);
      return [first, moved, stayed].map((result) => result.numAffectedRows);
    });
    expect(counts).toEqual([1n, 1n, 0n]);
    expect((await read(store.db, key)).rows).toEqual([{ value: '2' }]);
    await expect(
      inTransactionWithRetry(store, async (trx) => {
        await upsert(trx, key, '3');
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect((await read(store.db, key)).rows).toEqual([{ value: '2' }]);
  });

  it('refuses a builder that transforms an argument or shapes the query with it, at its first call', async () => {
    const transformed = compiledOnce((db, key: string) => db.selectFrom('settings').select('key').where('key', '=', key.toUpperCase()));
    await expect(transformed(store.db, 'a')).rejects.toThrow(/argument 0 never reaches the statement/);
    const unused = compiledOnce((db, _key: string) => db.selectFrom('settings').select('key'));
    await expect(unused(store.db, 'a')).rejects.toThrow(/argument 0 never reaches the statement/);
  });

  it('runs statements over VALUES lists of any length, text built once per shape', async () => {
    const upsert = rowsStatement(
      3,
      (_dialect, values) =>
        `insert into settings (key, value, updated_at) values ${values} on conflict (key) do update set value = excluded.value`,
    );
    expect(upsert(dialect, 2)).toBe(upsert(dialect, 2));
    expect(upsert(dialect, 2)).toContain(dialect === 'postgres' ? '($1, $2, $3), ($4, $5, $6)' : '(?, ?, ?), (?, ?, ?)');
    const prefix = `rows-${randomUUID()}`;
    for (const rows of [1, 3, 1]) {
      const parameters = Array.from({ length: rows }, (_, i) => [`${prefix}-${i}`, `"${rows}"`, 'now']).flat();
      await runSql(store.db, upsert(dialect, rows), parameters);
    }
    const stored = await settingsLike(prefix);
    expect(stored).toEqual([
      { key: `${prefix}-0`, value: '"1"' },
      { key: `${prefix}-1`, value: '"3"' },
      { key: `${prefix}-2`, value: '"3"' },
    ]);
  });

  it('runs one text with ? parameters on either dialect, numbered in order on Postgres', async () => {
    const update = bothDialects('update settings set value = ?, updated_at = ? where key in (?, ?)');
    expect(update('postgres')).toBe('update settings set value = $1, updated_at = $2 where key in ($3, $4)');
    expect(update('sqlite')).toBe('update settings set value = ?, updated_at = ? where key in (?, ?)');
    const prefix = `both-${randomUUID()}`;
    await store.db
      .insertInto('settings')
      .values(['a', 'b', 'c'].map((k) => ({ key: `${prefix}-${k}`, value: '0', updated_at: 'then' })))
      .execute();
    const result = await runSql(store.db, update(dialect), ['9', 'now', `${prefix}-a`, `${prefix}-c`]);
    expect(Number(result.numAffectedRows)).toBe(2);
    const stored = await settingsLike(prefix);
    expect(stored.map((row) => row.value)).toEqual(['9', '0', '9']);
  });
});
