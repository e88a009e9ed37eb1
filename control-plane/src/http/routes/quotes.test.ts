import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../clock.js';
import { findMachine } from '../../store/machines.js';
import { bearer, createTestApp, type SeededAccount, seedAccount, type TestApp } from '../../testing/app.js';
import { sampleManifest } from '../../testing/hosting.js';
import { agentHeartbeat, customImage, importTestTemplates, type LiveMachine, liveMachine, postQuote } from '../../testing/renting.js';
import { DIALECTS } from '../../testing/stores.js';

type Json = Record<string, any>;
const GIB = 1_073_741_824n;

function expectError(res: { statusCode: number; json(): Json }, status: number, code: string): void {
  expect(res.statusCode, JSON.stringify(res.json())).toBe(status);
  expect(res.json().error.code).toBe(code);
}

const QUOTE_KEYS = [
  'quote_id',
  'expires_at',
  'machine_id',
  'gpu_count',
  'machine_rate_micro_per_hour',
  'platform_fee_bps',
  'budget_micro',
  'duration_limit_s',
  'manifest_hash',
  'image_digest',
  'terms_version',
  'meter_start',
  'included_disk_gib',
  'included_egress_gib',
  'estimated_total_micro',
];

describe.each(DIALECTS)('POST /api/v1/quotes on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  let renter: SeededAccount;
  let machine: LiveMachine;
  let templates: Record<string, string>;

  beforeAll(async () => {
    t = await createTestApp(dialect, { configOverrides: { newHostMachineCap: 1000 } });
    renter = await seedAccount(t.ctx);
    machine = await liveMachine(t.ctx, t.app);
    templates = await importTestTemplates(t.ctx, [
      {
        kind: 'classical',
        name: 'quote-web',
        description: 'a web app',
        vram_fit: { min_vram_bytes: (8n * GIB).toString() },
        runtimes: [{ backend: 'cuda', image_digest: customImage('c') }],
        spec: { ports: [{ container_port: 8080, protocol: 'http' }], environment: {} },
      },
      {
        kind: 'classical',
        name: 'quote-huge',
        description: 'needs a big GPU',
        vram_fit: { min_vram_bytes: (80n * GIB).toString() },
        runtimes: [{ backend: 'cuda', image_digest: customImage('d') }],
        spec: { ports: [], environment: {} },
      },
      {
        kind: 'classical',
        name: 'quote-rocm',
        description: 'rocm only',
        vram_fit: { min_vram_bytes: '0' },
        runtimes: [{ backend: 'rocm', image_digest: customImage('e') }],
        spec: { ports: [], environment: {} },
      },
    ]);
  });
  afterAll(async () => {
    await t.destroy();
  });

  const body = (overrides: Json = {}): Json => ({
    offer_id: machine.offerId,
    gpu_count: 1,
    duration_limit_s: 3600,
    image_digest: customImage(),
    ...overrides,
  });

  it('answers a 60-second Quote exactly per contract, budget defaulting to the estimate', async () => {
    await agentHeartbeat(t.ctx, machine.machineId);
    const now = t.clock.now();
    const res = await postQuote(t.app, renter, body({ gpu_count: 2, duration_limit_s: 1800 }));
    expect(res.statusCode, res.body).toBe(201);
    const quote = res.json();
    expect(Object.keys(quote).sort()).toEqual([...QUOTE_KEYS].sort());
    const stored = await findMachine(t.store.db, machine.machineId);
    expect(quote).toMatchObject({
      machine_id: machine.machineId,
      gpu_count: 2,
      machine_rate_micro_per_hour: '500000',
      platform_fee_bps: 1000,
      duration_limit_s: 1800,
      // floor(550000 * 1800 / 3600)
      estimated_total_micro: '275000',
      budget_micro: '275000',
      manifest_hash: stored?.manifest_hash,
      image_digest: customImage(),
      terms_version: '2026-11',
      meter_start: 'verified_ready',
      included_disk_gib: 0,
      included_egress_gib: 0,
    });
    expect(quote.manifest_hash).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(quote.expires_at).toBe(new Date(now.getTime() + 60_000).toISOString());
    expect(res.headers['cache-control']).toBe('private, no-store');
  });

  it('takes the given budget, and replays the same quote for the same Idempotency-Key', async () => {
    const key = randomUUID();
    const first = await postQuote(t.app, renter, body({ budget_micro: '1000000' }), key);
    expect(first.statusCode).toBe(201);
    expect(first.json().budget_micro).toBe('1000000');
    const again = await postQuote(t.app, renter, body({ budget_micro: '1000000' }), key);
    expect(again.statusCode).toBe(201);
    expect(again.json().quote_id).toBe(first.json().quote_id);
    expectError(await postQuote(t.app, renter, body({ budget_micro: '2' }), key), 409, 'IDEMPOTENCY_CONFLICT');
    expectError(await postQuote(t.app, renter, body({ budget_micro: '0' })), 422, 'VALIDATION_FAILED');
  });

  it("quotes a template with its runtime for the machine's backend and echoes template_id", async () => {
    const res = await postQuote(t.app, renter, {
      offer_id: machine.offerId,
      gpu_count: 1,
      duration_limit_s: 600,
      template_id: templates['quote-web'],
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ template_id: templates['quote-web'], image_digest: customImage('c') });
    expectError(
      await postQuote(t.app, renter, {
        offer_id: machine.offerId,
        gpu_count: 1,
        duration_limit_s: 600,
        template_id: templates['quote-huge'],
      }),
      409,
      'TEMPLATE_DOES_NOT_FIT',
    );
    expectError(
      await postQuote(t.app, renter, {
        offer_id: machine.offerId,
        gpu_count: 1,
        duration_limit_s: 600,
        template_id: templates['quote-rocm'],
      }),
      409,
      'TEMPLATE_RUNTIME_MISSING',
    );
    expectError(
      await postQuote(t.app, renter, { offer_id: machine.offerId, gpu_count: 1, duration_limit_s: 600, template_id: randomUUID() }),
      404,
      'TEMPLATE_NOT_FOUND',
    );
  });

  it('needs exactly one of template_id and image_digest, and a valid body', async () => {
    expectError(await postQuote(t.app, renter, body({ template_id: templates['quote-web'] })), 422, 'VALIDATION_FAILED');
    const { image_digest: _omit, ...neither } = body();
    expectError(await postQuote(t.app, renter, neither), 422, 'VALIDATION_FAILED');
    expectError(await postQuote(t.app, renter, body({ gpu_count: 0 })), 422, 'VALIDATION_FAILED');
    expectError(await postQuote(t.app, renter, body({ extra: 1 })), 422, 'VALIDATION_FAILED');
    expectError(await postQuote(t.app, renter, body({ image_digest: 'busybox:latest' })), 422, 'VALIDATION_FAILED');
  });

  it('answers 404 OFFER_NOT_FOUND for an unknown offer and 409 OFFER_NOT_CURRENT for a stale version', async () => {
    expectError(await postQuote(t.app, renter, body({ offer_id: randomUUID() })), 404, 'OFFER_NOT_FOUND');
    expectError(await postQuote(t.app, renter, body({ expected_version: '7' })), 409, 'OFFER_NOT_CURRENT');
    expect((await postQuote(t.app, renter, body({ expected_version: '1' }))).statusCode).toBe(201);
  });

  it('needs a verified email (or an agent account) and the renter scope', async () => {
    const unverified = await seedAccount(t.ctx, { verified: false });
    expectError(await postQuote(t.app, unverified, body()), 403, 'EMAIL_NOT_VERIFIED');
    const hostOnly = await seedAccount(t.ctx, { scopes: ['host'] });
    expectError(await postQuote(t.app, hostOnly, body()), 403, 'SCOPE_REQUIRED');
    const anonymous = await t.app.inject({
      method: 'POST',
      url: '/api/v1/quotes',
      headers: { 'idempotency-key': randomUUID() },
      payload: body(),
    });
    expect(anonymous.statusCode).toBe(401);
  });

  it('refuses a machine that is offline, and GPUs it does not have', async () => {
    const other = await liveMachine(t.ctx, t.app);
    expectError(await postQuote(t.app, renter, body({ offer_id: other.offerId, gpu_count: 3 })), 409, 'GPUS_NOT_AVAILABLE');
    await t.clock.advance(46_000);
    expectError(await postQuote(t.app, renter, body({ offer_id: other.offerId })), 409, 'MACHINE_NOT_AVAILABLE');
    await agentHeartbeat(t.ctx, other.machineId);
    expect((await postQuote(t.app, renter, body({ offer_id: other.offerId }))).statusCode).toBe(201);
  });

  it('rents a machine without GPUs whole: gpu_count 1 only', async () => {
    const cpu = await liveMachine(t.ctx, t.app, { manifest: sampleManifest({ gpus: [] }) });
    const res = await postQuote(t.app, renter, body({ offer_id: cpu.offerId }));
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().gpu_count).toBe(1);
    expectError(await postQuote(t.app, renter, body({ offer_id: cpu.offerId, gpu_count: 2 })), 409, 'GPUS_NOT_AVAILABLE');
  });

  it('keeps [now, now + duration] inside availability and clear of maintenance windows', async () => {
    const m = await liveMachine(t.ctx, t.app);
    const now = t.clock.now();
    const iso = (ms: number) => new Date(now.getTime() + ms).toISOString();
    const committed = await t.app.inject({
      method: 'POST',
      url: `/api/v1/hosts/machines/${m.machineId}/offer`,
      headers: { ...bearer(m.host.apiKey), 'idempotency-key': randomUUID() },
      payload: {
        rate_micro_per_hour: '2000000',
        included_quotas: { included_disk_gib: 50, included_egress_gib: 10 },
        available_from: iso(-60_000),
        available_until: iso(10 * 3_600_000),
        maintenance_windows: [{ starts_at: iso(2 * 3_600_000), ends_at: iso(3 * 3_600_000), reason: 'kernel update' }],
        expected_version: '1',
      },
    });
    expect(committed.statusCode, committed.body).toBe(202);
    const ok = await postQuote(t.app, renter, body({ offer_id: m.offerId, duration_limit_s: 3600 }));
    expect(ok.statusCode, ok.body).toBe(201);
    expect(ok.json()).toMatchObject({ machine_rate_micro_per_hour: '2000000', included_disk_gib: 50, included_egress_gib: 10 });
    expectError(await postQuote(t.app, renter, body({ offer_id: m.offerId, duration_limit_s: 3 * 3600 })), 409, 'MAINTENANCE_CONFLICT');
    expectError(await postQuote(t.app, renter, body({ offer_id: m.offerId, duration_limit_s: 11 * 3600 })), 409, 'OUTSIDE_AVAILABILITY');
  });

  it('is in the OpenAPI document with its error statuses', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json();
    const op = doc.paths['/api/v1/quotes'].post;
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['201', '401', '403', '404', '409', '422']));
  });
});
