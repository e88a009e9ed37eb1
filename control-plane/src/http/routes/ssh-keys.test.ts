// The account's saved SSH keys (issue 25 item 1), the offer search's min_gpu_count, and a machine's current rentals as
// its host reads them: on both stores, through the routes.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../clock.js';
import { bearer, createTestApp, seedAccount, type TestApp } from '../../testing/app.js';
import { fund, liveMachine, reserveJob, runJob, sshPublicKey } from '../../testing/renting.js';
import { DIALECTS } from '../../testing/stores.js';

describe.each(DIALECTS)('saved SSH keys, min_gpu_count and current rentals on %s', (dialect) => {
  let t: TestApp<ManualClock>;

  beforeAll(async () => {
    t = await createTestApp(dialect, { configOverrides: { newHostMachineCap: 1000 } });
  });
  afterAll(async () => {
    await t.destroy();
  });

  const post = (token: string, url: string, payload: unknown) =>
    t.app.inject({ method: 'POST', url, headers: { ...bearer(token), 'idempotency-key': randomUUID() }, payload: payload as object });

  it('saves, lists, refuses a duplicate or a non-key in words, and removes only the owner’s key', async () => {
    const owner = await seedAccount(t.ctx);
    const other = await seedAccount(t.ctx);
    const key = sshPublicKey('me@laptop');
    const added = await post(owner.sessionToken, '/api/v1/account/ssh-keys', { public_key: `  ${key}\n`, label: 'laptop' });
    expect(added.statusCode, added.body).toBe(201);
    expect(added.json()).toMatchObject({ label: 'laptop', public_key: key });
    expect(added.json().fingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);

    const again = await post(owner.sessionToken, '/api/v1/account/ssh-keys', { public_key: key });
    expect(again.statusCode).toBe(409);
    expect(again.json().error.code).toBe('SSH_KEY_EXISTS');
    const bad = await post(owner.sessionToken, '/api/v1/account/ssh-keys', { public_key: 'ssh-ed25519 AAAA' });
    expect(bad.statusCode).toBe(422);
    expect(bad.json().error.message).toContain('one OpenSSH public key line');
    // Another account may save the same key.
    expect((await post(other.sessionToken, '/api/v1/account/ssh-keys', { public_key: key })).statusCode).toBe(201);

    const list = await t.app.inject({ method: 'GET', url: '/api/v1/account/ssh-keys', headers: bearer(owner.apiKey) });
    expect(list.json().items.map((k: { id: string }) => k.id)).toEqual([added.json().id]);
    const url = `/api/v1/account/ssh-keys/${added.json().id}`;
    expect((await t.app.inject({ method: 'DELETE', url, headers: bearer(other.sessionToken) })).statusCode).toBe(404);
    expect((await t.app.inject({ method: 'DELETE', url, headers: bearer(owner.sessionToken) })).json()).toEqual({ removed: true });
    expect((await t.app.inject({ method: 'DELETE', url, headers: bearer(owner.sessionToken) })).statusCode).toBe(404);
  });

  it('filters offers on a least GPU count, and shows the host its machine’s rental with the earning rate', async () => {
    const renter = await seedAccount(t.ctx);
    await fund(t.ctx, renter.accountId, 50_000_000n);
    const machine = await liveMachine(t.ctx, t.app);
    const offers = async (query: string) =>
      (await t.app.inject({ method: 'GET', url: `/api/v1/offers?limit=100${query}`, headers: bearer(renter.apiKey) }))
        .json()
        .items.filter((o: { machine_id: string }) => o.machine_id === machine.machineId);
    const [offer] = await offers('');
    expect(offer.gpu_count).toBeGreaterThan(0);
    expect(await offers(`&min_gpu_count=${offer.gpu_count}`)).toHaveLength(1);
    expect(await offers(`&min_gpu_count=${offer.gpu_count + 1}`)).toHaveLength(0);

    const read = async () =>
      (
        await t.app.inject({
          method: 'GET',
          url: `/api/v1/hosts/machines/${machine.machineId}`,
          headers: bearer(machine.host.sessionToken),
        })
      ).json();
    expect((await read()).current_rentals).toEqual([]);
    const { jobId, quote } = await reserveJob(t.app, renter, machine);
    expect((await read()).current_rentals).toEqual([
      expect.objectContaining({
        job_id: jobId,
        state: 'RESERVED',
        metered: false,
        earning_rate_micro_per_hour: quote.machine_rate_micro_per_hour,
      }),
    ]);
    const startedAt = await runJob(t, machine.machineId, jobId);
    expect((await read()).current_rentals).toEqual([
      expect.objectContaining({ job_id: jobId, state: 'RUNNING', metered: true, since: startedAt.toISOString(), earned_micro: '0' }),
    ]);
  });
});
