import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../clock.js';
import { bearer, createTestApp, type SeededAccount, seedAccount, type TestApp } from '../../testing/app.js';
import { enrollDirect, nettestReceipt, randomAddress, sendHeartbeat } from '../../testing/hosting.js';
import { DIALECTS } from '../../testing/stores.js';

type Json = Record<string, any>;

describe.each(DIALECTS)('network test on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  let owner: SeededAccount;
  let renter: SeededAccount;

  beforeAll(async () => {
    t = await createTestApp(dialect, { configOverrides: { newHostMachineCap: 100, publicBaseUrl: 'https://cp.example.test' } });
    owner = await seedAccount(t.ctx);
    renter = await seedAccount(t.ctx, { scopes: ['renter'] });
  });
  afterAll(async () => {
    await t.destroy();
  });

  const queue = (machineId: string, token = owner.apiKey, key = randomUUID()) =>
    t.app.inject({
      method: 'POST',
      url: `/api/v1/hosts/machines/${machineId}/nettest`,
      headers: { ...bearer(token), 'idempotency-key': key },
    });
  const receive = (machineId: string, receipt: ReturnType<typeof nettestReceipt>) =>
    t.store.db.transaction().execute((trx) => t.ctx.channel.apply(trx, machineId, receipt, t.clock.now()));
  const machine = async (machineId: string) =>
    (await t.app.inject({ method: 'GET', url: `/api/v1/hosts/machines/${machineId}`, headers: bearer(owner.apiKey) })).json();

  it("queues a run_nettest command against the control plane's own endpoint, bounded to 30 s", async () => {
    const machineId = await enrollDirect(t.app, owner);
    const res = await queue(machineId);
    expect(res.statusCode, res.body).toBe(202);
    const { command_id } = res.json();
    expect(res.json()).toEqual({ machine_id: machineId, command_id, state: 'QUEUED' });
    const rows = await t.store.db.selectFrom('agent_outbox').selectAll().where('machine_id', '=', machineId).execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ command_id, kind: 'run_nettest', acked_at: null });
    expect(JSON.parse(rows[0]!.body)).toEqual({
      endpoint: 'https://cp.example.test/api/v1/nettest',
      timeout_ms: 30_000,
      download_bytes: 25_000_000,
      upload_bytes: 10_000_000,
    });
    // A repeat with the same key is the same command; a new key queues another.
    const key = randomUUID();
    const once = await queue(machineId, owner.apiKey, key);
    const again = await queue(machineId, owner.apiKey, key);
    expect(again.json()).toEqual(once.json());
    expect(await t.store.db.selectFrom('agent_outbox').selectAll().where('machine_id', '=', machineId).execute()).toHaveLength(2);
  });

  it('is for the owner or an admin only', async () => {
    const machineId = await enrollDirect(t.app, owner);
    const stranger = await seedAccount(t.ctx);
    expect((await queue(machineId, stranger.apiKey)).statusCode).toBe(404);
    expect((await queue(randomUUID())).statusCode).toBe(404);
    // A stranger's renter-only key is a stranger first (http/owner-first.ts).
    expect((await queue(machineId, renter.apiKey)).statusCode).toBe(404);
    const admin = await seedAccount(t.ctx, { role: 'admin' });
    expect((await queue(machineId, admin.sessionToken)).statusCode).toBe(202);
    const noKey = await t.app.inject({ method: 'POST', url: `/api/v1/hosts/machines/${machineId}/nettest`, headers: bearer(owner.apiKey) });
    expect(noKey.statusCode).toBe(422);
  });

  it("applies the receipt to the machine's network facts and its offer's bandwidth", async () => {
    const machineId = await enrollDirect(t.app, owner);
    await sendHeartbeat(t.ctx, machineId, true);
    expect((await machine(machineId)).network).toBeNull();
    const measuredAt = t.clock.now().toISOString();
    await receive(machineId, nettestReceipt({ measured_at: measuredAt, download_mbps: 940.5, upload_mbps: 412.9, latency_ms: 3.25 }));
    const view = await machine(machineId);
    expect(view.network).toEqual({ download_mbps: 940.5, upload_mbps: 412.9, latency_ms: 3.25, measured_at: measuredAt, error: null });
    expect(view.offer.measured_bandwidth_mbps).toBe('412');
    const listed = await t.app.inject({ method: 'GET', url: '/api/v1/offers', headers: bearer(renter.apiKey) });
    expect(listed.json().items.find((o: Json) => o.machine_id === machineId).measured_bandwidth_mbps).toBe('412');

    // A late resend of an older measurement changes nothing.
    await receive(
      machineId,
      nettestReceipt({ measured_at: new Date(t.clock.now().getTime() - 60_000).toISOString(), download_mbps: 1, upload_mbps: 1 }),
    );
    expect((await machine(machineId)).network.download_mbps).toBe(940.5);

    // A failed measurement is shown as such.
    await t.clock.advance(60_000);
    await receive(machineId, nettestReceipt({ measured_at: t.clock.now().toISOString(), error: 'endpoint unreachable' }));
    const failed = await machine(machineId);
    expect(failed.network).toEqual({
      download_mbps: null,
      upload_mbps: null,
      latency_ms: null,
      measured_at: t.clock.now().toISOString(),
      error: 'endpoint unreachable',
    });
    expect(failed.offer.measured_bandwidth_mbps).toBeNull();

    // An agent clock ahead of ours is pinned to ours.
    await receive(machineId, nettestReceipt({ measured_at: '2030-01-01T00:00:00.000Z', download_mbps: 100, upload_mbps: 200 }));
    expect((await machine(machineId)).network.measured_at).toBe(t.clock.now().toISOString());
  });

  describe('measurement endpoints', () => {
    it('answers a ping', async () => {
      const res = await t.app.inject({ method: 'GET', url: '/api/v1/nettest/ping', remoteAddress: randomAddress() });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({ pong: true, server_time: t.clock.now().toISOString() });
      expect(res.headers['cache-control']).toBe('no-store');
    });

    it('streams exactly the bytes asked for, up to 100 MB', async () => {
      const res = await t.app.inject({ method: 'GET', url: '/api/v1/nettest/download?bytes=200001', remoteAddress: randomAddress() });
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toBe('application/octet-stream');
      expect(res.rawPayload.length).toBe(200_001);
      expect(res.rawPayload.every((b) => b === 0)).toBe(true);
      expect(
        (await t.app.inject({ method: 'GET', url: '/api/v1/nettest/download?bytes=104857601', remoteAddress: randomAddress() })).statusCode,
      ).toBe(422);
      expect(
        (await t.app.inject({ method: 'GET', url: '/api/v1/nettest/download?bytes=0', remoteAddress: randomAddress() })).statusCode,
      ).toBe(422);
      expect((await t.app.inject({ method: 'GET', url: '/api/v1/nettest/download', remoteAddress: randomAddress() })).statusCode).toBe(422);
    });

    it('consumes an octet-stream upload and says how many bytes arrived', async () => {
      const payload = Buffer.alloc(3 * 1024 * 1024, 7);
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/v1/nettest/upload',
        remoteAddress: randomAddress(),
        headers: { 'content-type': 'application/octet-stream' },
        payload,
      });
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toEqual({ bytes: payload.length });
      // Larger than the JSON body limit, yet only this route takes raw bytes.
      const json = await t.app.inject({
        method: 'POST',
        url: '/api/v1/nettest/upload',
        remoteAddress: randomAddress(),
        payload: { bytes: 5 },
      });
      expect(json.statusCode).toBe(415);
      const elsewhere = await t.app.inject({
        method: 'POST',
        url: '/api/v1/hosts/pairings',
        remoteAddress: randomAddress(),
        headers: { 'content-type': 'application/octet-stream' },
        payload: Buffer.alloc(10),
      });
      expect(elsewhere.statusCode).toBe(415);
      const tooBig = await t.app.inject({
        method: 'POST',
        url: '/api/v1/nettest/upload',
        remoteAddress: randomAddress(),
        headers: { 'content-type': 'application/octet-stream', 'content-length': String(100 * 1024 * 1024 + 1) },
        payload: Buffer.alloc(10),
      });
      expect(tooBig.statusCode).toBe(413);
    });

    it('rate limits per address: pings generously, transfers harder', async () => {
      const remoteAddress = randomAddress();
      for (let i = 0; i < 300; i++)
        expect((await t.app.inject({ method: 'GET', url: '/api/v1/nettest/ping', remoteAddress })).statusCode).toBe(200);
      const limited = await t.app.inject({ method: 'GET', url: '/api/v1/nettest/ping', remoteAddress });
      expect(limited.statusCode).toBe(429);
      expect(limited.json().error).toMatchObject({ code: 'UNAVAILABLE', retryable: true });
      expect(limited.headers['retry-after']).toBeUndefined();
      for (let i = 0; i < 20; i++)
        expect((await t.app.inject({ method: 'GET', url: '/api/v1/nettest/download?bytes=1', remoteAddress })).statusCode).toBe(200);
      expect((await t.app.inject({ method: 'GET', url: '/api/v1/nettest/download?bytes=1', remoteAddress })).statusCode).toBe(429);
      const upload = await t.app.inject({
        method: 'POST',
        url: '/api/v1/nettest/upload',
        remoteAddress,
        headers: { 'content-type': 'application/octet-stream' },
        payload: Buffer.alloc(1),
      });
      expect(upload.statusCode).toBe(429);
      expect((await t.app.inject({ method: 'GET', url: '/api/v1/nettest/ping', remoteAddress: randomAddress() })).statusCode).toBe(200);
    });
  });
});
