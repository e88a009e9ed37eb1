import { randomUUID } from 'node:crypto';
import { TelemetryResponse, type TelemetrySample } from '@ark/shared';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../clock.js';
import { bearer, createTestApp, type SeededAccount, seedAccount, type TestApp } from '../../testing/app.js';
import { enrollDirect, telemetryMessage } from '../../testing/hosting.js';
import { DIALECTS } from '../../testing/stores.js';
import { purgeTelemetry, startWorkers, telemetryRetentionWorker } from '../../workers/index.js';

type Json = Record<string, any>;
const responseSchema = TypeCompiler.Compile(TelemetryResponse);
const GPU0 = '00000000:01:00.0';
const GPU1 = '00000000:02:00.0';

describe.each(DIALECTS)('telemetry on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  let owner: SeededAccount;

  beforeAll(async () => {
    // 12:02:30, inside the 12:00 bucket.
    t = await createTestApp(dialect, { configOverrides: { newHostMachineCap: 100 } });
    t.clock.set('2026-03-01T12:02:30.000Z');
    owner = await seedAccount(t.ctx);
  });
  afterAll(async () => {
    await t.destroy();
  });

  /** A batch applied as the gateway applies reliable messages: in one transaction. */
  const apply = (machineId: string, samples: TelemetrySample[]) =>
    t.store.db.transaction().execute((trx) => t.ctx.channel.apply(trx, machineId, telemetryMessage(samples), t.clock.now()));
  const read = (machineId: string, query = '', token = owner.apiKey) =>
    t.app.inject({ method: 'GET', url: `/api/v1/hosts/machines/${machineId}/telemetry${query}`, headers: bearer(token) });

  it('rolls batches up into 300 s buckets with exact min/avg/max; unmeasured fields are absent', async () => {
    const machineId = await enrollDirect(t.app, owner);
    await apply(machineId, [
      {
        at: '2026-03-01T11:55:10.000Z',
        host: { cpu_utilization_pct: 10, load1: 0.5 },
        devices: [{ pci_address: GPU0, temperature_c: 40, utilization_pct: 0 }],
      },
      {
        at: '2026-03-01T11:55:20.000Z',
        host: { cpu_utilization_pct: 30 },
        devices: [{ pci_address: GPU0, temperature_c: 44, utilization_pct: 100 }],
      },
      { at: '2026-03-01T12:00:00.000Z', devices: [{ pci_address: GPU0, power_watts: 250 }, { pci_address: GPU1 }] },
    ]);
    // A second batch lands in both buckets and merges.
    await apply(machineId, [
      {
        at: '2026-03-01T11:59:59.999Z',
        host: { cpu_utilization_pct: 2, memory_used_bytes: 8_589_934_592 },
        devices: [{ pci_address: GPU0, temperature_c: 36 }],
      },
      {
        at: '2026-03-01T12:01:00.000Z',
        devices: [
          { pci_address: GPU0, power_watts: 350, fan_pct: 55 },
          { pci_address: GPU1, memory_used_bytes: 1_073_741_824 },
        ],
      },
    ]);
    const res = await read(machineId);
    expect(res.statusCode, res.body).toBe(200);
    expect(responseSchema.Check(res.json())).toBe(true);
    expect(res.json()).toEqual({
      machine_id: machineId,
      window_s: 21_600,
      bucket_s: 300,
      retention_s: 172_800,
      buckets: [
        {
          bucket: '2026-03-01T11:55:00.000Z',
          samples: 3,
          devices: [
            {
              pci_address: GPU0,
              temperature_c: { min: 36, avg: 40, max: 44 },
              utilization_pct: { min: 0, avg: 50, max: 100 },
            },
          ],
          host: {
            cpu_utilization_pct: { min: 2, avg: 14, max: 30 },
            load1: { min: 0.5, avg: 0.5, max: 0.5 },
            memory_used_bytes: { min: 8_589_934_592, avg: 8_589_934_592, max: 8_589_934_592 },
          },
        },
        {
          bucket: '2026-03-01T12:00:00.000Z',
          samples: 2,
          devices: [
            { pci_address: GPU0, power_watts: { min: 250, avg: 300, max: 350 }, fan_pct: { min: 55, avg: 55, max: 55 } },
            { pci_address: GPU1, memory_used_bytes: { min: 1_073_741_824, avg: 1_073_741_824, max: 1_073_741_824 } },
          ],
        },
      ],
    });
  });

  it('parses the window, refuses malformed ones and refuses (not clamps) windows past the retention', async () => {
    const machineId = await enrollDirect(t.app, owner);
    await apply(machineId, [
      { at: '2026-03-01T12:01:00.000Z', devices: [{ pci_address: GPU0, temperature_c: 50 }] },
      { at: '2026-03-01T10:00:00.000Z', devices: [{ pci_address: GPU0, temperature_c: 60 }] },
    ]);
    let res = await read(machineId, '?window=5m');
    expect(res.json().window_s).toBe(300);
    expect(res.json().buckets.map((b: Json) => b.bucket)).toEqual(['2026-03-01T12:00:00.000Z']);
    res = await read(machineId, '?window=3h');
    expect(res.json().window_s).toBe(10_800);
    expect(res.json().buckets.map((b: Json) => b.bucket)).toEqual(['2026-03-01T10:00:00.000Z', '2026-03-01T12:00:00.000Z']);
    expect((await read(machineId, '?window=90s')).json().window_s).toBe(90);
    expect((await read(machineId, '?window=48h')).json().window_s).toBe(172_800);
    for (const bad of ['6', '0h', '1d', '-5m', 'abc', '1.5h']) {
      const refused = await read(machineId, `?window=${encodeURIComponent(bad)}`);
      expect(refused.statusCode, bad).toBe(422);
      expect(refused.json().error.code).toBe('VALIDATION_FAILED');
      expect(refused.json().error.message).toContain('window');
    }
    for (const tooLong of ['49h', '172801s', '3000m']) {
      const refused = await read(machineId, `?window=${tooLong}`);
      expect(refused.statusCode).toBe(422);
      expect(refused.json().error.code).toBe('TELEMETRY_WINDOW_TOO_LONG');
    }
  });

  it('answers 404 to anyone but the owner or an admin', async () => {
    const machineId = await enrollDirect(t.app, owner);
    const stranger = await seedAccount(t.ctx, { role: 'host' });
    const res = await read(machineId, '', stranger.sessionToken);
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe('NOT_FOUND');
    // Even a malformed window tells a stranger nothing.
    expect((await read(machineId, '?window=nope', stranger.sessionToken)).statusCode).toBe(404);
    expect((await read(randomUUID())).statusCode).toBe(404);
    const admin = await seedAccount(t.ctx, { role: 'admin' });
    expect((await read(machineId, '', admin.sessionToken)).statusCode).toBe(200);
    expect((await t.app.inject({ method: 'GET', url: `/api/v1/hosts/machines/${machineId}/telemetry` })).statusCode).toBe(401);
  });

  it('answers a renter-only key 404 on a machine it does not own, never 403; its owner’s renter-only key 403 (issue 22)', async () => {
    const machineId = await enrollDirect(t.app, owner);
    const stranger = await seedAccount(t.ctx, { scopes: ['renter'] });
    for (const query of ['', '?window=nope']) {
      const res = await read(machineId, query, stranger.apiKey);
      expect(res.statusCode, res.body).toBe(404);
      expect(res.json().error.code).toBe('NOT_FOUND');
    }
    expect((await read(randomUUID(), '', stranger.apiKey)).statusCode).toBe(404);
    const host = await seedAccount(t.ctx, { stepUp: true });
    const ownMachine = await enrollDirect(t.app, host);
    const created = await t.app.inject({
      method: 'POST',
      url: '/api/v1/account/api-keys',
      headers: { ...bearer(host.sessionToken), 'idempotency-key': randomUUID() },
      payload: { label: 'renter only', scopes: ['renter'] },
    });
    expect(created.statusCode, created.body).toBe(201);
    const own = await read(ownMachine, '', created.json().secret);
    expect(own.statusCode, own.body).toBe(403);
    expect(own.json().error.code).toBe('SCOPE_REQUIRED');
  });

  it('keeps 48 hours: the retention worker purges older buckets', async () => {
    const machineId = await enrollDirect(t.app, owner);
    await apply(machineId, [
      { at: '2026-02-27T12:04:00.000Z', devices: [{ pci_address: GPU0, temperature_c: 1 }] },
      { at: '2026-02-27T12:06:00.000Z', devices: [{ pci_address: GPU0, temperature_c: 2 }] },
      { at: '2026-03-01T12:00:00.000Z', devices: [{ pci_address: GPU0, temperature_c: 3 }] },
    ]);
    const buckets = async () =>
      (
        await t.store.db
          .selectFrom('telemetry_buckets')
          .select('bucket_start')
          .where('machine_id', '=', machineId)
          .orderBy('bucket_start')
          .execute()
      ).map((r) => r.bucket_start);
    // At 12:02:30 the horizon (48 h back) falls inside the 12:00 bucket of Feb 27: it stays, so a 48h window is whole.
    expect(await buckets()).toEqual(['2026-02-27T12:00:00.000Z', '2026-02-27T12:05:00.000Z', '2026-03-01T12:00:00.000Z']);
    expect(await purgeTelemetry(t.store, t.clock.now())).toBe(0);
    t.clock.set('2026-03-01T12:05:00.000Z');
    expect(await purgeTelemetry(t.store, t.clock.now())).toBeGreaterThan(0);
    expect(await buckets()).toEqual(['2026-02-27T12:05:00.000Z', '2026-03-01T12:00:00.000Z']);
    const stats = await t.store.db
      .selectFrom('telemetry_device_stats')
      .select('bucket_start')
      .where('machine_id', '=', machineId)
      .execute();
    expect(stats.every((s) => s.bucket_start >= '2026-02-27T12:05:00.000Z')).toBe(true);
    // The scheduler hook runs the same step.
    t.clock.set('2026-03-03T12:10:00.000Z');
    const logged: string[] = [];
    const runner = startWorkers({
      store: t.store,
      clock: t.clock,
      logger: { info: (_o, msg) => logged.push(msg), error: (_o, msg) => logged.push(`error ${msg}`) },
      workers: [telemetryRetentionWorker],
      schedule: false,
    });
    await runner.runOnce();
    await runner.stop();
    expect(await buckets()).toEqual([]);
    expect(logged).toEqual(['worker step']);
    expect(telemetryRetentionWorker.intervalMs).toBe(300_000);
  });

  it('drops samples older than the retention or from the future, and applies nothing for an empty result', async () => {
    t.clock.set('2026-03-05T00:00:00.000Z');
    const machineId = await enrollDirect(t.app, owner);
    await apply(machineId, [
      { at: '2026-03-02T00:00:00.000Z', devices: [{ pci_address: GPU0, temperature_c: 1 }] },
      { at: '2026-03-05T01:00:00.000Z', devices: [{ pci_address: GPU0, temperature_c: 1 }] },
    ]);
    expect((await read(machineId, '?window=48h')).json().buckets).toEqual([]);
  });
});
