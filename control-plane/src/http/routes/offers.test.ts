import { randomUUID } from 'node:crypto';
import { OfferSummary } from '@ark/shared';
import { TypeCompiler } from '@sinclair/typebox/compiler';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../clock.js';
import { validateTemplateImport } from '../../domain/templates/index.js';
import { setHostingBlocked } from '../../store/hosts.js';
import { importTemplates, recordAdminQualification } from '../../store/templates.js';
import { bearer, createTestApp, type SeededAccount, seedAccount, type TestApp } from '../../testing/app.js';
import { enrollDirect, sampleManifest, sendHeartbeat } from '../../testing/hosting.js';
import { DIALECTS } from '../../testing/stores.js';

type Json = Record<string, any>;
type Res = { statusCode: number; json(): Json; body: string };

function expectError(res: Res, status: number, code: string) {
  expect(res.statusCode, res.body).toBe(status);
  expect(res.json().error.code).toBe(code);
  return res.json().error as { code: string; message: string };
}

const summarySchema = TypeCompiler.Compile(OfferSummary);
const H100 = 'NVIDIA H100 80GB HBM3';

describe.each(DIALECTS)('offers on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  let owner: SeededAccount;
  let renter: SeededAccount;

  beforeAll(async () => {
    // Fee 10%, seed rate 0.5 USDC/h, and room for many machines per host.
    t = await createTestApp(dialect, { configOverrides: { platformFeeBps: 1000, seedRateMicroPerHour: 500_000n, newHostMachineCap: 100 } });
    owner = await seedAccount(t.ctx, { scopes: ['host'] });
    renter = await seedAccount(t.ctx, { scopes: ['renter'] });
  });
  afterAll(async () => {
    await t.destroy();
  });

  const iso = (offsetMs: number) => new Date(t.clock.now().getTime() + offsetMs).toISOString();
  const DAY = 86_400_000;
  const offerBody = (over: Json = {}) => ({
    rate_micro_per_hour: '1000000',
    included_quotas: { included_disk_gib: 100, included_egress_gib: 50 },
    available_from: iso(0),
    available_until: iso(30 * DAY),
    expected_version: '0',
    ...over,
  });
  const commit = (machineId: string, body: Json, token = owner.apiKey, key = randomUUID()) =>
    t.app.inject({
      method: 'POST',
      url: `/api/v1/hosts/machines/${machineId}/offer`,
      headers: { ...bearer(token), 'idempotency-key': key },
      payload: body,
    });
  const list = (query = '', token = renter.apiKey) =>
    t.app.inject({ method: 'GET', url: `/api/v1/offers${query}`, headers: bearer(token) });

  it('commits versions by compare-and-set: "0" first, then the current version; stale versions get 409', async () => {
    const machineId = await enrollDirect(t.app, owner, { goLive: false });
    const first = await commit(machineId, offerBody());
    expect(first.statusCode, first.body).toBe(202);
    const { offer_id } = first.json();
    expect(first.json()).toEqual({ machine_id: machineId, offer_id, offer_version: '1' });
    expectError(await commit(machineId, offerBody()), 409, 'OFFER_VERSION_MISMATCH');
    const second = await commit(machineId, offerBody({ rate_micro_per_hour: '2000000', expected_version: '1' }));
    expect(second.json()).toEqual({ machine_id: machineId, offer_id, offer_version: '2' });
    expectError(await commit(machineId, offerBody({ expected_version: '1' })), 409, 'OFFER_VERSION_MISMATCH');
    expectError(await commit(machineId, offerBody({ expected_version: '7' })), 409, 'OFFER_VERSION_MISMATCH');
    // Versions are immutable rows; the machine shows the current one.
    const versions = await t.store.db
      .selectFrom('offer_versions')
      .select(['version', 'rate_micro_per_hour'])
      .where('offer_id', '=', offer_id)
      .orderBy('version')
      .execute();
    expect(versions).toEqual([
      { version: 1n, rate_micro_per_hour: 1_000_000n },
      { version: 2n, rate_micro_per_hour: 2_000_000n },
    ]);
    const machine = await t.app.inject({ method: 'GET', url: `/api/v1/hosts/machines/${machineId}`, headers: bearer(owner.apiKey) });
    expect(machine.json().offer).toMatchObject({
      offer_id,
      offer_version: '2',
      rate_micro_per_hour: '2000000',
      total_rate_micro_per_hour: '2200000',
      seeded: false,
      listed: true,
    });
  });

  it('lets only one of two racing commits on the same version win', async () => {
    const machineId = await enrollDirect(t.app, owner, { goLive: false });
    const results = await Promise.all([commit(machineId, offerBody()), commit(machineId, offerBody({ rate_micro_per_hour: '3' }))]);
    expect(results.map((r) => r.statusCode).sort()).toEqual([202, 409]);
  });

  it('replays a commit with the same Idempotency-Key instead of making a new version', async () => {
    const machineId = await enrollDirect(t.app, owner, { goLive: false });
    const key = randomUUID();
    const once = await commit(machineId, offerBody(), owner.apiKey, key);
    const again = await commit(machineId, offerBody(), owner.apiKey, key);
    expect(again.statusCode).toBe(202);
    expect(again.json()).toEqual(once.json());
    expectError(await commit(machineId, offerBody({ rate_micro_per_hour: '5' }), owner.apiKey, key), 409, 'IDEMPOTENCY_CONFLICT');
  });

  it('validates windows and the body strictly, naming the field', async () => {
    const machineId = await enrollDirect(t.app, owner, { goLive: false });
    const w = (starts: number, ends: number, reason = 'maintenance') => ({ starts_at: iso(starts), ends_at: iso(ends), reason });
    const cases: Array<[Json, string]> = [
      [{ available_until: iso(0) }, 'body/available_until'],
      [{ available_from: iso(-3 * DAY), available_until: iso(-DAY) }, 'body/available_until must be in the future'],
      [{ maintenance_windows: [w(2 * DAY, DAY)] }, 'body/maintenance_windows/0/ends_at'],
      [{ maintenance_windows: [w(-DAY, DAY)] }, 'body/maintenance_windows/0/starts_at'],
      [{ maintenance_windows: [w(29 * DAY, 31 * DAY)] }, 'body/maintenance_windows/0/ends_at'],
      [{ maintenance_windows: [w(DAY, 3 * DAY), w(2 * DAY, 4 * DAY)] }, 'body/maintenance_windows/1/starts_at'],
      [{ maintenance_windows: [w(5 * DAY, 6 * DAY), w(DAY, 2 * DAY)] }, 'body/maintenance_windows/1/starts_at'],
      [{ maintenance_windows: [{ ...w(DAY, 2 * DAY), extra: 1 }] }, 'body/maintenance_windows/0'],
      [{ maintenance_windows: [{ starts_at: iso(DAY), ends_at: iso(2 * DAY) }] }, 'reason'],
      [{ included_quotas: { included_disk_gib: 1, included_egress_gib: 1, included_excess: 1 } }, 'body/included_quotas'],
      [{ included_quotas: { included_disk_gib: -1, included_egress_gib: 1 } }, 'body/included_quotas/included_disk_gib'],
      [{ included_quotas: { included_disk_gib: 1 } }, 'included_egress_gib'],
      [{ rate_micro_per_hour: 1000 }, 'body/rate_micro_per_hour'],
      [{ rate_micro_per_hour: '0' }, 'body/rate_micro_per_hour'],
      [{ rate_micro_per_hour: '1.5' }, 'body/rate_micro_per_hour'],
      [{ expected_version: undefined }, 'expected_version'],
      [{ available_from: '2026-01-01T00:00:00+01:00' }, 'body/available_from'],
      [{ surprise: true }, 'surprise'],
    ];
    for (const [over, field] of cases) {
      const body: Json = offerBody(over);
      for (const key of Object.keys(body)) if (body[key] === undefined) delete body[key];
      const error = expectError(await commit(machineId, body), 422, 'VALIDATION_FAILED');
      expect(error.message, JSON.stringify(over)).toContain(field);
    }
    // Back-to-back windows are fine.
    const ok = await commit(machineId, offerBody({ maintenance_windows: [w(DAY, 2 * DAY), w(2 * DAY, 3 * DAY)] }));
    expect(ok.statusCode, ok.body).toBe(202);
  });

  it('lets only the owner commit, answers 404 to anyone else, and refuses blocked hosts', async () => {
    const machineId = await enrollDirect(t.app, owner, { goLive: false });
    const stranger = await seedAccount(t.ctx, { scopes: ['host'] });
    expectError(await commit(machineId, offerBody(), stranger.apiKey), 404, 'NOT_FOUND');
    expectError(await commit(randomUUID(), offerBody()), 404, 'NOT_FOUND');
    // A renter-only key of a stranger is a stranger first: 404, never 403 (http/owner-first.ts).
    expectError(await commit(machineId, offerBody(), renter.apiKey), 404, 'NOT_FOUND');
    const blockedHost = await seedAccount(t.ctx, { scopes: ['host'] });
    const blockedMachine = await enrollDirect(t.app, blockedHost, { goLive: false });
    await setHostingBlocked(t.store.db, blockedHost.accountId, true, t.clock.now());
    expectError(await commit(blockedMachine, offerBody(), blockedHost.apiKey), 403, 'HOSTING_BLOCKED');
  });

  it('lists the seeded offer, unverified, only from the first healthy heartbeat', async () => {
    const machineId = await enrollDirect(t.app, owner, { manifest: sampleManifest({ hostname: 'seeded', region: 'seed-region' }) });
    expect((await list('?region=seed-region')).json().items).toEqual([]);
    await sendHeartbeat(t.ctx, machineId, false, ['docker down']);
    expect((await list('?region=seed-region')).json().items).toEqual([]);
    await sendHeartbeat(t.ctx, machineId, true);
    const items = (await list('?region=seed-region')).json().items;
    expect(items).toHaveLength(1);
    expect(items[0]).toMatchObject({ machine_id: machineId, offer_version: '1', total_rate_micro_per_hour: '550000', readiness: 'ready' });
    expect(new Date(items[0].available_until).getTime() - new Date(items[0].available_from).getTime()).toBe(30 * DAY);
    const machine = await t.app.inject({ method: 'GET', url: `/api/v1/hosts/machines/${machineId}`, headers: bearer(owner.apiKey) });
    expect(machine.json().offer).toMatchObject({ seeded: true, listed: true, rate_micro_per_hour: '500000', readiness: 'ready' });
  });

  describe('listing for renters', () => {
    let a: string;
    let b: string;
    let c: string;

    beforeAll(async () => {
      const region = 'list-region';
      // a: 2x RTX 4090 (24 GiB), cheap; b: 1x H100 (80 GiB), dearer, maintenance in 2 days; c: waiting (never heartbeated); d: off.
      a = await enrollDirect(t.app, owner, { manifest: sampleManifest({ region }) });
      b = await enrollDirect(t.app, owner, {
        manifest: sampleManifest({
          region,
          hostname: 'h100',
          gpus: [{ pci_address: '00000000:41:00.0', model: H100, vram_bytes: '85899345920' }],
        }),
      });
      c = await enrollDirect(t.app, owner, { manifest: sampleManifest({ region }) });
      const d = await enrollDirect(t.app, owner, { goLive: false, manifest: sampleManifest({ region }) });
      expect((await commit(a, offerBody({ rate_micro_per_hour: '999', expected_version: '1' }))).statusCode).toBe(202);
      const maintenance = [{ starts_at: iso(2 * DAY), ends_at: iso(2 * DAY + 3_600_000), reason: 'driver update' }];
      expect(
        (await commit(b, offerBody({ rate_micro_per_hour: '2000000', expected_version: '1', maintenance_windows: maintenance })))
          .statusCode,
      ).toBe(202);
      expect((await commit(d, offerBody())).statusCode).toBe(202);
      await sendHeartbeat(t.ctx, a, true);
      await sendHeartbeat(t.ctx, b, true);
      void c;
    });

    const ids = (res: Res) => res.json().items.map((o: Json) => o.machine_id);

    it('shows listed offers of live machines, cheapest first, each an exact OfferSummary', async () => {
      const res = await list('?region=list-region');
      expect(res.statusCode, res.body).toBe(200);
      expect(ids(res)).toEqual([a, b]);
      for (const item of res.json().items) expect(summarySchema.Check(item), JSON.stringify([...summarySchema.Errors(item)])).toBe(true);
      const [first, second] = res.json().items;
      expect(first).toEqual({
        offer_id: first.offer_id,
        machine_id: a,
        observed_at: t.clock.now().toISOString(),
        offer_version: '2',
        expected_version: '2',
        readiness: 'ready',
        // floor(999 * 11000 / 10000) = floor(1098.9)
        total_rate_micro_per_hour: '1098',
        included_quotas: { included_disk_gib: 100, included_egress_gib: 50 },
        available_from: first.available_from,
        available_until: first.available_until,
        maintenance_windows: [],
        gpu_count: 2,
        model: 'NVIDIA GeForce RTX 4090',
        vram_bytes: '25757220864',
        ram_bytes: '137438953472',
        disk_bytes: '2000398934016',
        region: 'list-region',
        manifest_hash: first.manifest_hash,
      });
      expect(first.manifest_hash).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(second.total_rate_micro_per_hour).toBe('2200000');
      expect(second.maintenance_windows).toEqual([{ starts_at: iso(2 * DAY), ends_at: iso(2 * DAY + 3_600_000), reason: 'driver update' }]);
      expect(JSON.stringify(res.json())).not.toMatch(/address|hostname|\bip\b/i);
    });

    it('filters by gpu model, vram, region, total rate and availability', async () => {
      expect(ids(await list(`?region=list-region&gpu_model=${encodeURIComponent(H100)}`))).toEqual([b]);
      expect(ids(await list('?region=list-region&gpu_model=Nope'))).toEqual([]);
      expect(ids(await list('?region=list-region&min_vram_bytes=25757220864'))).toEqual([a, b]);
      expect(ids(await list('?region=list-region&min_vram_bytes=25757220865'))).toEqual([b]);
      expect(ids(await list('?region=elsewhere'))).toEqual([]);
      // The ceiling applies to the total rate, fee included: a's total is 1098.
      expect(ids(await list('?region=list-region&max_rate_micro_per_hour=1098'))).toEqual([a]);
      expect(ids(await list('?region=list-region&max_rate_micro_per_hour=1097'))).toEqual([]);
      expect(ids(await list('?region=list-region&max_rate_micro_per_hour=2200000'))).toEqual([a, b]);
      expect(ids(await list('?region=list-region&max_rate_micro_per_hour=99999999999999999999999999'))).toEqual([a, b]);
      expect(ids(await list(`?region=list-region&available_at=${iso(2 * DAY + 60_000)}`))).toEqual([a]);
      expect(ids(await list(`?region=list-region&available_at=${iso(2 * DAY + 3_600_000)}`))).toEqual([a, b]);
      expect(ids(await list(`?region=list-region&available_at=${iso(31 * DAY)}`))).toEqual([]);
      expectError(await list('?min_vram_bytes=-1'), 422, 'VALIDATION_FAILED');
      expectError(await list('?available_at=tomorrow'), 422, 'VALIDATION_FAILED');
      expectError(await list('?unknown=1'), 422, 'VALIDATION_FAILED');
    });

    it('pages with an opaque cursor', async () => {
      const first = await list('?region=list-region&limit=1');
      expect(ids(first)).toEqual([a]);
      const cursor = first.json().next_cursor;
      expect(typeof cursor).toBe('string');
      const second = await list(`?region=list-region&limit=1&cursor=${encodeURIComponent(cursor)}`);
      expect(ids(second)).toEqual([b]);
      expect(second.json().next_cursor).toBeNull();
      expectError(await list('?cursor=forged.cursor'), 422, 'INVALID_CURSOR');
    });

    it('reports readiness from liveness at read time', async () => {
      await t.clock.advance(45_001);
      const res = await list('?region=list-region');
      expect(res.json().items.map((o: Json) => o.readiness)).toEqual(['unavailable', 'unavailable']);
      await sendHeartbeat(t.ctx, a, true);
      expect((await list('?region=list-region')).json().items.map((o: Json) => o.readiness)).toEqual(['ready', 'unavailable']);
    });

    it('adds the fit of a named template, from the smallest device on each machine', async () => {
      const templateId = randomUUID();
      const parsed = validateTemplateImport([
        {
          template_id: templateId,
          kind: 'custom',
          name: `fit-${templateId}`,
          description: 'needs 40 GiB per device',
          vram_fit: { min_vram_bytes: String(40 * 2 ** 30) },
          runtimes: [{ backend: 'cuda', image_digest: `registry.invalid/fit@sha256:${'a'.repeat(64)}` }],
          spec: { ports: [], environment: {} },
        },
      ]);
      if (!parsed.ok) throw new Error(parsed.errors.join('; '));
      await importTemplates(t.ctx.store.db, parsed.templates, t.clock.now());
      // Only published templates (qualified on an admitted machine) are offered for fit.
      await recordAdminQualification(t.ctx.store.db, {
        templateId,
        machineId: b,
        now: t.clock.now(),
        actorAccountId: null,
        reason: 'test',
        via: 'cli',
      });
      await sendHeartbeat(t.ctx, a, true);
      await sendHeartbeat(t.ctx, b, true);
      const res = await list(`?region=list-region&template_id=${templateId}`);
      expect(res.statusCode, res.body).toBe(200);
      for (const item of res.json().items) expect(summarySchema.Check(item), JSON.stringify([...summarySchema.Errors(item)])).toBe(true);
      const fits = Object.fromEntries(res.json().items.map((o: Json) => [o.machine_id, o.fit]));
      expect(fits[a]).toMatchObject({ template_id: templateId, fits: false, device_vram_bytes: '25757220864' });
      expect(fits[b]).toMatchObject({ template_id: templateId, fits: true, device_vram_bytes: '85899345920' });
      expect((await list('?region=list-region')).json().items.every((o: Json) => o.fit === undefined)).toBe(true);
      expectError(await list(`?template_id=${randomUUID()}`), 404, 'TEMPLATE_NOT_FOUND');
    });

    it('needs the renter scope', async () => {
      expectError(await list('', owner.apiKey), 403, 'SCOPE_REQUIRED');
      expectError(await t.app.inject({ method: 'GET', url: '/api/v1/offers' }), 401, 'UNAUTHENTICATED');
    });
  });
});
