import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestStore, DIALECTS, type TestStore } from '../testing/stores.js';
import { acquireLease, initWatchState, LeaseLostError, moveCursor, releaseLease } from './deposits.js';

const CHAIN = 8453;
const LEASE_MS = 5_000;
const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));

describe.each(DIALECTS)('single-holder leases on %s', (dialect) => {
  let store: TestStore;

  beforeAll(async () => {
    store = await createTestStore(dialect);
    await initWatchState(store.db, { chainId: CHAIN, network: 'base', cursorBlock: 10n, cursorHash: '0xa', at: at(0) });
  });

  afterAll(async () => {
    await store?.close();
  });

  const changes = () => store.db.selectFrom('lease_changes').selectAll().orderBy('token').execute();

  it('renews in place, refuses a live lease, takes over an expired one with the next token, and logs each takeover', async () => {
    expect(await acquireLease(store.db, CHAIN, 'a', at(0), LEASE_MS)).toBe(true);
    expect(await acquireLease(store.db, CHAIN, 'a', at(2), LEASE_MS)).toBe(true);
    // b while a's lease (renewed until 7 s) is live: refused.
    expect(await acquireLease(store.db, CHAIN, 'b', at(6), LEASE_MS)).toBe(false);
    // a paused past its lease: b takes over.
    expect(await acquireLease(store.db, CHAIN, 'b', at(8), LEASE_MS)).toBe(true);
    const log = await changes();
    expect(log.map((c) => [c.owner, c.token, c.previous_owner, c.previous_until])).toEqual([
      ['a', 1n, null, null],
      ['b', 2n, 'a', at(7).toISOString()],
    ]);
    for (const change of log) {
      if (change.previous_until !== null) expect(change.previous_until < change.acquired_at).toBe(true);
    }
  });

  it('a holder that wakes after a takeover cannot write under its old lease', async () => {
    // a wakes at 9 s (b holds until 13 s) and tries to move the cursor: the write itself checks the lease.
    await expect(
      store.db
        .transaction()
        .execute((trx) => moveCursor(trx, { chainId: CHAIN, owner: 'a', expectedBlock: 10n, block: 12n, hash: '0xb', now: at(9) })),
    ).rejects.toBeInstanceOf(LeaseLostError);
    // Nor renew it: the lease is b's.
    expect(await acquireLease(store.db, CHAIN, 'a', at(9), LEASE_MS)).toBe(false);
  });

  it('a released lease is taken at once, logged with no previous holder', async () => {
    await releaseLease(store.db, CHAIN, 'b');
    expect(await acquireLease(store.db, CHAIN, 'c', at(10), LEASE_MS)).toBe(true);
    const last = (await changes()).at(-1);
    expect(last).toMatchObject({ owner: 'c', token: 3n, previous_owner: null, previous_until: null });
  });
});
