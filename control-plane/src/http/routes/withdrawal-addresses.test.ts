import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../clock.js';
import { findLiveWithdrawalAddress } from '../../store/withdrawal-addresses.js';
import { bearer, createTestApp, type SeededAccount, seedAccount, type TestApp } from '../../testing/app.js';
import { DIALECTS } from '../../testing/stores.js';

const ADDRESS = '0x52908400098527886E0F7030069857D2E4169EE7';

describe.each(DIALECTS)('withdrawal address routes on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  let owner: SeededAccount;
  let stranger: SeededAccount;

  beforeAll(async () => {
    t = await createTestApp(dialect);
    owner = await seedAccount(t.ctx, { stepUp: true });
    stranger = await seedAccount(t.ctx, { stepUp: true });
  });
  afterAll(async () => {
    await t.destroy();
  });

  const add = (body: unknown, token = owner.sessionToken, key: string | null = randomUUID()) =>
    t.app.inject({
      method: 'POST',
      url: '/api/v1/withdrawal-addresses',
      payload: body as object,
      headers: { ...bearer(token), ...(key ? { 'idempotency-key': key } : {}) },
    });
  const list = (token = owner.sessionToken, query = '') =>
    t.app.inject({ method: 'GET', url: `/api/v1/withdrawal-addresses${query}`, headers: bearer(token) });
  const remove = (id: string, token = owner.sessionToken) =>
    t.app.inject({ method: 'DELETE', url: `/api/v1/withdrawal-addresses/${id}`, headers: bearer(token) });

  it('needs a step-up and an Idempotency-Key to add an address', async () => {
    const fresh = await seedAccount(t.ctx);
    const res = await add({ address: ADDRESS }, fresh.sessionToken);
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe('STEP_UP_REQUIRED');
    expect((await add({ address: ADDRESS }, owner.sessionToken, null)).statusCode).toBe(422);
  });

  it('adds an address at version 1 on base by default, and replays the same request', async () => {
    const key = randomUUID();
    const res = await add({ address: ADDRESS, label: 'cold wallet' }, owner.sessionToken, key);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.headers['cache-control']).toBe('private, no-store');
    expect(res.json()).toEqual({
      id: expect.any(String),
      address: ADDRESS,
      label: 'cold wallet',
      network: 'base',
      version: '1',
      created_at: t.clock.now().toISOString(),
    });
    const replay = await add({ address: ADDRESS, label: 'cold wallet' }, owner.sessionToken, key);
    expect(replay.json()).toEqual(res.json());
    expect((await add({ address: ADDRESS, label: 'other' }, owner.sessionToken, key)).json().error.code).toBe('IDEMPOTENCY_CONFLICT');
  });

  it('refuses a duplicate (any letter case) on the same network, allows another network or account', async () => {
    const duplicate = await add({ address: ADDRESS.toLowerCase() });
    expect(duplicate.statusCode).toBe(409);
    expect(duplicate.json().error.code).toBe('WITHDRAWAL_ADDRESS_EXISTS');
    const other = await add({ address: ADDRESS, network: 'ethereum' });
    expect(other.statusCode).toBe(201);
    expect(other.json().label).toBeNull();
    expect((await add({ address: ADDRESS }, stranger.sessionToken)).statusCode).toBe(201);
  });

  it('validates the address, label and network', async () => {
    for (const body of [
      { address: '0x1234' },
      { address: ADDRESS.slice(0, -1) + 'g' },
      { address: ADDRESS, label: '' },
      { address: ADDRESS, network: 'Base Main' },
      { address: ADDRESS, extra: 1 },
    ]) {
      const res = await add(body);
      expect(res.statusCode, JSON.stringify(body)).toBe(422);
      expect(res.json().error.code).toBe('VALIDATION_FAILED');
    }
  });

  it('refuses the zero address, which nobody holds the key to', async () => {
    const res = await add({ address: '0x0000000000000000000000000000000000000000' });
    expect(res.statusCode).toBe(422);
    expect(res.json().error).toMatchObject({ code: 'VALIDATION_FAILED', message: expect.stringContaining('the zero address') });
    expect((await list()).json().items.map((a: { address: string }) => a.address)).not.toContain(
      '0x0000000000000000000000000000000000000000',
    );
  });

  it('lists only the caller’s live addresses, page by page', async () => {
    await t.clock.advance(1);
    await add({ address: '0x0000000000000000000000000000000000000001', network: 'bsc' });
    const page1 = (await list(owner.sessionToken, '?limit=2')).json();
    expect(page1.items).toHaveLength(2);
    expect(page1.items[0].network).toBe('bsc');
    const page2 = (await list(owner.sessionToken, `?limit=2&cursor=${encodeURIComponent(page1.next_cursor)}`)).json();
    expect(page2.items).toHaveLength(1);
    expect(page2.next_cursor).toBeNull();
    const strangers = (await list(stranger.sessionToken)).json();
    expect(strangers.items).toHaveLength(1);
  });

  it('removes an address: the row stays with removed_at and a bumped version, and leaves the list', async () => {
    const created = (await add({ address: '0x00000000000000000000000000000000000000aa' })).json();
    expect((await remove(created.id, stranger.sessionToken)).statusCode).toBe(404);
    expect(await findLiveWithdrawalAddress(t.store.db, owner.accountId, created.id)).toMatchObject({ version: 1n });
    const res = await remove(created.id);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ removed: true });
    const row = await t.store.db.selectFrom('withdrawal_addresses').selectAll().where('id', '=', created.id).executeTakeFirstOrThrow();
    expect(row.version).toBe(2n);
    expect(row.removed_at).toBe(t.clock.now().toISOString());
    expect(await findLiveWithdrawalAddress(t.store.db, owner.accountId, created.id)).toBeUndefined();
    expect((await list()).json().items.map((a: { id: string }) => a.id)).not.toContain(created.id);
    expect((await remove(created.id)).statusCode).toBe(404);
    expect((await remove(randomUUID())).statusCode).toBe(404);
    // The same address may be added again, as a new row starting over.
    const again = await add({ address: '0x00000000000000000000000000000000000000aa' });
    expect(again.statusCode).toBe(201);
    expect(again.json().id).not.toBe(created.id);
  });
});
