import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../clock.js';
import { bearer, createTestApp, type SeededAccount, seedAccount, type TestApp } from '../../testing/app.js';
import { DIALECTS } from '../../testing/stores.js';

const CONCURRENT = 20;

describe.each(DIALECTS)('idempotent API key creation under concurrency on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  let account: SeededAccount;

  beforeAll(async () => {
    t = await createTestApp(dialect);
    account = await seedAccount(t.ctx, { stepUp: true });
  });
  afterAll(async () => {
    await t.destroy();
  });

  it(`creates exactly one key from ${CONCURRENT} simultaneous identical requests`, async () => {
    const key = randomUUID();
    const label = `race-${key}`;
    // inject starts every request in the same tick, so they overlap inside the server as much as they can.
    const send = () =>
      t.app
        .inject({
          method: 'POST',
          url: '/api/v1/account/api-keys',
          headers: { ...bearer(account.sessionToken), 'idempotency-key': key },
          payload: { label, scopes: ['renter'] },
        })
        .then((res) => ({ status: res.statusCode, body: res.json() as Record<string, any> }));

    const answers = await Promise.all(Array.from({ length: CONCURRENT }, send));
    const created = answers.filter((a) => a.status === 201);
    const busy = answers.filter((a) => a.status === 409);
    expect(created.length + busy.length).toBe(CONCURRENT);
    expect(created.length).toBeGreaterThanOrEqual(1);
    for (const answer of busy) {
      expect(answer.body.error.code).toBe('IDEMPOTENCY_IN_PROGRESS');
      expect(answer.body.error.retryable).toBe(true);
    }
    const first = created[0]!.body;
    for (const answer of created) expect(answer.body).toEqual(first);

    const rows = await t.store.db.selectFrom('api_keys').selectAll().where('label', '=', label).execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]!.id).toBe(first.api_key_id);

    // Once settled, every retry is the replay of that one result.
    const retry = await send();
    expect(retry.status).toBe(201);
    expect(retry.body).toEqual(first);

    // The answer carries the key's secret: it is stored sealed, never as sent.
    const stored = await t.store.db.selectFrom('idempotency_keys').select('response_body').where('key', '=', key).executeTakeFirstOrThrow();
    expect(stored.response_body).toMatch(/^v1\./);
    expect(stored.response_body).not.toContain(first.secret);
    expect(stored.response_body).not.toContain(first.api_key_id);
  });
});
