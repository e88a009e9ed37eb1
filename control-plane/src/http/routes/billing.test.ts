import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerAccounts } from '../../domain/ledger/accounts.js';
import { runTransfer } from '../../store/ledger.js';
import { bearer, createTestApp, seedAccount, type TestApp } from '../../testing/app.js';
import type { ManualClock } from '../../clock.js';
import { DIALECTS } from '../../testing/stores.js';

describe.each(DIALECTS)('GET /api/v1/billing/balance on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  beforeAll(async () => {
    t = await createTestApp(dialect);
  });
  afterAll(async () => {
    await t.destroy();
  });

  const get = (token?: string) => t.app.inject({ method: 'GET', url: '/api/v1/billing/balance', headers: token ? bearer(token) : {} });

  it('answers zero for a new renter, privately', async () => {
    const renter = await seedAccount(t.ctx);
    const response = await get(renter.apiKey);
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({
      available_micro: '0',
      held_micro: '0',
      currency: 'USDC',
      deposits: { items: [], next_cursor: null },
      top_ups: { items: [], next_cursor: null },
      credits: [],
    });
    expect(response.headers['cache-control']).toBe('private, no-store');
  });

  it("reports available and the sum of the caller's job holds, and nobody else's", async () => {
    const renter = await seedAccount(t.ctx);
    const other = await seedAccount(t.ctx);
    const at = t.clock.now();
    await runTransfer(t.store, {
      from: ledgerAccounts.external(),
      to: ledgerAccounts.available(renter.accountId),
      amountMicro: 25_000_000n,
      kind: 'deposit',
      reference: 'd1',
      at,
    });
    await runTransfer(t.store, {
      from: ledgerAccounts.external(),
      to: ledgerAccounts.available(other.accountId),
      amountMicro: 9_000_000n,
      kind: 'deposit',
      reference: 'd2',
      at,
    });
    for (const [job, amount] of [
      ['job-a', 4_000_000n],
      ['job-b', 1_500_001n],
    ] as const) {
      await runTransfer(t.store, {
        from: ledgerAccounts.available(renter.accountId),
        to: ledgerAccounts.hold(`${renter.accountId}-${job}`, renter.accountId),
        amountMicro: amount,
        kind: 'reservation',
        reference: job,
        at,
      });
    }
    await runTransfer(t.store, {
      from: ledgerAccounts.available(other.accountId),
      to: ledgerAccounts.hold(`${other.accountId}-job`, other.accountId),
      amountMicro: 2_000_000n,
      kind: 'reservation',
      reference: 'x',
      at,
    });

    const mine = await get(renter.sessionToken);
    expect(mine.statusCode).toBe(200);
    expect(mine.json()).toEqual({
      available_micro: '19499999',
      held_micro: '5500001',
      currency: 'USDC',
      deposits: { items: [], next_cursor: null },
      top_ups: { items: [], next_cursor: null },
      credits: [],
    });
    expect((await get(other.apiKey)).json()).toEqual({
      available_micro: '7000000',
      held_micro: '2000000',
      currency: 'USDC',
      deposits: { items: [], next_cursor: null },
      top_ups: { items: [], next_cursor: null },
      credits: [],
    });
  });

  it('needs a credential with the renter scope', async () => {
    const anonymous = await get();
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.json().error.code).toBe('UNAUTHENTICATED');
    const hostOnly = await seedAccount(t.ctx, { scopes: ['host'] });
    const refused = await get(hostOnly.apiKey);
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.code).toBe('SCOPE_REQUIRED');
  });

  it('is in the OpenAPI document', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const op = doc.paths['/api/v1/billing/balance'].get;
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['200', '401', '403']));
    expect(op.responses['200'].content['application/json'].schema.properties.currency).toMatchObject({ enum: ['USDC'] });
  });
});
