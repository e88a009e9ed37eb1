import { randomUUID } from 'node:crypto';
import { Machine } from '@ark/shared';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../clock.js';
import { machinesTableDirectory } from '../../gateway/directory.js';
import { bearer, createTestApp, type SeededAccount, seedAccount, type TestApp } from '../../testing/app.js';
import { enrollDirect, heartbeatMessage, machinePublicKey, sampleManifest } from '../../testing/hosting.js';
import { DIALECTS } from '../../testing/stores.js';

type Json = Record<string, any>;
const machineSchema = TypeCompiler.Compile(Machine);

describe.each(DIALECTS)('machines on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  let owner: SeededAccount;

  beforeAll(async () => {
    t = await createTestApp(dialect, { configOverrides: { newHostMachineCap: 100, heartbeatIntervalMs: 15_000 } });
    owner = await seedAccount(t.ctx);
  });
  afterAll(async () => {
    await t.destroy();
  });

  const get = (url: string, token = owner.sessionToken) => t.app.inject({ method: 'GET', url, headers: bearer(token) });
  const beat = (machineId: string, healthy: boolean, problems: string[] = []) =>
    // The heartbeat handlers as the gateway calls them.
    t.ctx.channel.heartbeat(machineId, heartbeatMessage(healthy, problems), t.clock.now());

  it('shows the owner its machine: manifest, go-live, liveness, heartbeat, network facts, offer', async () => {
    const manifest = sampleManifest({ hostname: 'view-rig' });
    const machineId = await enrollDirect(t.app, owner, { manifest });
    let res = await get(`/api/v1/hosts/machines/${machineId}`);
    expect(res.statusCode, res.body).toBe(200);
    const view = res.json();
    expect(machineSchema.Check(view)).toBe(true);
    expect(view).toMatchObject({
      machine_id: machineId,
      hostname: 'view-rig',
      manifest,
      go_live: true,
      live: 'waiting',
      live_error: null,
      liveness: 'offline',
      last_heartbeat_at: null,
      healthy: null,
      problems: [],
      network: null,
      created_at: t.clock.now().toISOString(),
    });
    expect(view.offer).toMatchObject({
      offer_version: '1',
      seeded: true,
      listed: false,
      readiness: 'provisioning',
      measured_bandwidth_mbps: null,
    });

    await beat(machineId, true);
    res = await get(`/api/v1/hosts/machines/${machineId}`);
    expect(res.json()).toMatchObject({ live: 'live', liveness: 'online', healthy: true, last_heartbeat_at: t.clock.now().toISOString() });
    expect(res.json().offer).toMatchObject({ listed: true, readiness: 'ready' });

    // Liveness is computed at read time: 3 heartbeat intervals of grace.
    await t.clock.advance(45_000);
    expect((await get(`/api/v1/hosts/machines/${machineId}`)).json().liveness).toBe('online');
    await t.clock.advance(1);
    res = await get(`/api/v1/hosts/machines/${machineId}`);
    expect(res.json()).toMatchObject({ liveness: 'offline', live: 'live' });
    expect(res.json().offer.readiness).toBe('unavailable');

    // Unhealthy after going live: still live, but not ready, problems shown.
    await beat(machineId, false, ['disk almost full']);
    res = await get(`/api/v1/hosts/machines/${machineId}`);
    expect(res.json()).toMatchObject({ live: 'live', liveness: 'online', healthy: false, problems: ['disk almost full'] });
    expect(res.json().offer.readiness).toBe('unavailable');
  });

  it('moves waiting -> failed -> live and keeps off machines off', async () => {
    const failing = await enrollDirect(t.app, owner);
    await beat(failing, false, ['docker unreachable']);
    let res = await get(`/api/v1/hosts/machines/${failing}`);
    expect(res.json()).toMatchObject({ live: 'failed', live_error: 'docker unreachable' });
    expect(res.json().offer).toMatchObject({ listed: false, readiness: 'unavailable' });
    await beat(failing, true);
    res = await get(`/api/v1/hosts/machines/${failing}`);
    expect(res.json()).toMatchObject({ live: 'live', live_error: null });
    expect(res.json().offer.listed).toBe(true);

    const off = await enrollDirect(t.app, owner, { goLive: false });
    await beat(off, true);
    res = await get(`/api/v1/hosts/machines/${off}`);
    expect(res.json()).toMatchObject({ go_live: false, live: 'off', liveness: 'online', offer: null });
  });

  it('lets the host turn go-live off and on again', async () => {
    const goLive = (machineId: string, on: boolean, token = owner.apiKey) =>
      t.app.inject({
        method: 'POST',
        url: `/api/v1/hosts/machines/${machineId}/go-live`,
        headers: { ...bearer(token), 'idempotency-key': randomUUID() },
        payload: { go_live: on },
      });
    const machineId = await enrollDirect(t.app, owner);
    await beat(machineId, true);
    // Repeating the current choice changes nothing.
    expect((await goLive(machineId, true)).json()).toEqual({ machine_id: machineId, go_live: true, live: 'live' });
    let res = await goLive(machineId, false);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ machine_id: machineId, go_live: false, live: 'off' });
    await beat(machineId, true);
    expect((await get(`/api/v1/hosts/machines/${machineId}`)).json()).toMatchObject({ go_live: false, live: 'off' });
    res = await goLive(machineId, true);
    expect(res.json()).toEqual({ machine_id: machineId, go_live: true, live: 'waiting' });
    await beat(machineId, true);
    expect((await get(`/api/v1/hosts/machines/${machineId}`)).json()).toMatchObject({ go_live: true, live: 'live' });
    const commands = await t.store.db
      .selectFrom('agent_outbox')
      .select(['kind', 'body'])
      .where('machine_id', '=', machineId)
      .orderBy('command_seq')
      .execute();
    expect(commands.map((c) => [c.kind, JSON.parse(c.body)])).toEqual([
      ['update_go_live', { go_live: false }],
      ['update_go_live', { go_live: true }],
    ]);

    // A machine enrolled without go-live gets a seeded offer when turned on.
    const quiet = await enrollDirect(t.app, owner, { goLive: false });
    await goLive(quiet, true);
    await beat(quiet, true);
    expect((await get(`/api/v1/hosts/machines/${quiet}`)).json().offer).toMatchObject({ seeded: true, listed: true, offer_version: '1' });

    const stranger = await seedAccount(t.ctx);
    expect((await goLive(machineId, false, stranger.apiKey)).statusCode).toBe(404);
  });

  it('ignores heartbeats of unknown machines', async () => {
    await expect(beat(randomUUID(), true)).resolves.toBeUndefined();
  });

  it('answers 404 to anyone but the owner; an admin may read', async () => {
    const machineId = await enrollDirect(t.app, owner);
    // Another host (a renter who never hosted has no host scope: 403 SCOPE_REQUIRED before any machine is looked at).
    const stranger = await seedAccount(t.ctx, { role: 'host' });
    expect((await get(`/api/v1/hosts/machines/${machineId}`, stranger.sessionToken)).statusCode).toBe(404);
    expect((await get(`/api/v1/hosts/machines/${randomUUID()}`)).statusCode).toBe(404);
    const admin = await seedAccount(t.ctx, { role: 'admin' });
    expect((await get(`/api/v1/hosts/machines/${machineId}`, admin.sessionToken)).statusCode).toBe(200);
    // An admin's API key is not an admin session.
    expect((await get(`/api/v1/hosts/machines/${machineId}`, admin.apiKey)).statusCode).toBe(404);
    expect((await get('/api/v1/hosts/machines/not-a-uuid')).statusCode).toBe(422);
  });

  it("lists only the caller's machines, oldest first, in pages", async () => {
    const host = await seedAccount(t.ctx);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push(await enrollDirect(t.app, host));
      await t.clock.advance(1000);
    }
    const first = await get('/api/v1/hosts/machines?limit=2', host.apiKey);
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json().items.map((m: Json) => m.machine_id)).toEqual(ids.slice(0, 2));
    for (const item of first.json().items) expect(machineSchema.Check(item)).toBe(true);
    const second = await get(`/api/v1/hosts/machines?limit=2&cursor=${encodeURIComponent(first.json().next_cursor)}`, host.apiKey);
    expect(second.json()).toEqual({ items: [expect.objectContaining({ machine_id: ids[2] })], next_cursor: null });
    const other = await seedAccount(t.ctx);
    expect((await get('/api/v1/hosts/machines', other.apiKey)).json()).toEqual({ items: [], next_cursor: null });
    // A cursor is bound to its owner's list.
    expect((await get(`/api/v1/hosts/machines?cursor=${encodeURIComponent(first.json().next_cursor)}`, other.apiKey)).statusCode).toBe(422);
  });

  it("gives the gateway each machine's public key", async () => {
    const publicKey = machinePublicKey();
    const created = await t.app.inject({
      method: 'POST',
      url: '/api/v1/hosts/enrollment-tokens',
      headers: { ...bearer(owner.apiKey), 'idempotency-key': randomUUID() },
    });
    const enrolled = await t.app.inject({
      method: 'POST',
      url: '/api/v1/agents/enroll',
      payload: { enrollment_token: created.json().enrollment_token, public_key: publicKey, manifest: sampleManifest() },
    });
    const directory = machinesTableDirectory(t.store);
    expect(await directory.publicKeyOf(enrolled.json().machine_id)).toBe(publicKey);
    expect(await directory.publicKeyOf(randomUUID())).toBeNull();
  });
});
