import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../clock.js';
import { validateTemplateImport } from '../../domain/templates/import.js';
import { INFERENCE_DATA_NOTICE } from '../../domain/templates/template.js';
import { insertAccount } from '../../store/accounts.js';
import type { Executor } from '../../store/db.js';
import { insertMachine } from '../../store/machines.js';
import { issueEnrollmentToken } from '../../services/hosting/enrollment.js';
import { importTemplates, recordAgentQualification } from '../../store/templates.js';
import { bearer, createTestApp, type SeededAccount, seedAccount, type TestApp } from '../../testing/app.js';
import { DIALECTS } from '../../testing/stores.js';

type Json = Record<string, any>;
const GIB = 1_073_741_824n;
const digest = (c: string) => `registry.test/ark/${c}@sha256:${c.repeat(64).slice(0, 64)}`;

/** An enrolled machine with these GPUs, owned by a fresh host. */
async function seedMachine(db: Executor, now: Date, vramBytes: bigint[] = [80n * GIB]): Promise<string> {
  const owner = await insertAccount(db, {
    email: `host-${randomUUID()}@example.test`,
    passwordHash: null,
    name: null,
    role: 'host',
    emailVerified: true,
    now,
  });
  const token = await issueEnrollmentToken(db, { accountId: owner.id, pairingId: null, goLive: false, now });
  const id = randomUUID();
  await insertMachine(db, {
    id,
    ownerAccountId: owner.id,
    publicKey: Buffer.alloc(32, 7).toString('base64'),
    manifest: {
      hostname: 'rig',
      gpus: vramBytes.map((v, i) => ({ pci_address: `0000:0${i}:00.0`, model: 'Test GPU', vram_bytes: v.toString() })),
      cpu: { model: 'cpu', cores: 8 },
      ram_bytes: (64n * GIB).toString(),
      disk_bytes: (512n * GIB).toString(),
      os: 'linux',
      agent_version: 'test',
    },
    goLive: false,
    enrollmentTokenId: token.id,
    pairingId: null,
    now,
  });
  return id;
}

function expectError(res: { statusCode: number; json(): Json }, status: number, code: string): string {
  expect(res.statusCode, JSON.stringify(res.json())).toBe(status);
  expect(res.json().error.code).toBe(code);
  return res.json().error.message as string;
}

function doc(name: string, overrides: Record<string, unknown> = {}) {
  return {
    kind: 'classical',
    name,
    description: `${name} template`,
    vram_fit: { min_vram_bytes: '0' },
    runtimes: [{ backend: 'cuda', image_digest: digest('a') }],
    spec: { ports: [{ container_port: 8080, protocol: 'http' }], environment: {}, health_check: { port: 8080, path: '/healthz' } },
    ...overrides,
  };
}

describe.each(DIALECTS)('template routes on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  let ids: Record<string, string>;
  let admin: SeededAccount;
  let renter: SeededAccount;
  let machineId: string;

  beforeAll(async () => {
    t = await createTestApp(dialect);
    machineId = await seedMachine(t.store.db, t.clock.now());
    admin = await seedAccount(t.ctx, { role: 'admin' });
    renter = await seedAccount(t.ctx, { role: 'renter' });
    const items = [
      doc('cpu-shell'),
      doc('jupyter', {
        kind: 'custom',
        vram_fit: { min_vram_bytes: (8n * GIB).toString() },
        runtimes: [{ backend: 'rocm', image_digest: digest('b') }],
      }),
      doc('llm', {
        kind: 'model',
        vram_fit: { min_vram_bytes: (24n * GIB).toString(), recommended_vram_bytes: (40n * GIB).toString() },
        runtimes: [
          { backend: 'cuda', image_digest: digest('c') },
          { backend: 'rocm', image_digest: digest('d') },
        ],
        spec: {
          ports: [{ container_port: 8000, protocol: 'http', name: 'openai' }],
          environment: { MODEL: 'x' },
          engine: { name: 'vllm', model: 'm', api_port: 8000 },
        },
      }),
      doc('unqualified'),
      ...Array.from({ length: 5 }, (_, i) => doc(`z-extra-${i}`)),
    ];
    const validation = validateTemplateImport(items);
    if (!validation.ok) throw new Error(validation.errors.join('\n'));
    const summary = await importTemplates(t.store.db, validation.templates, t.clock.now());
    ids = Object.fromEntries(summary.templates.map((s) => [s.name, s.templateId]));
    for (const [name, id] of Object.entries(ids)) {
      if (name === 'unqualified') continue;
      const template = validation.templates.find((x) => x.id === id);
      const result = await recordAgentQualification(t.store.db, {
        templateId: id,
        machineId,
        now: t.clock.now(),
        detail: { imageDigest: template?.runtimes[0]?.image_digest as string, deviceVramBytes: [80n * GIB] },
      });
      expect(result.recorded).toBe(true);
    }
  });
  afterAll(async () => {
    await t.destroy();
  });

  const get = (url: string, token?: string) => t.app.inject({ method: 'GET', url, headers: token ? bearer(token) : {} });
  const names = (res: { json(): Json }) => (res.json().items as Json[]).map((i) => i.name);

  describe('GET /api/v1/templates', () => {
    it('is public and not cached; lists only published templates, ordered by name', async () => {
      const res = await get('/api/v1/templates?limit=100');
      expect(res.statusCode).toBe(200);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(names(res)).toEqual(['cpu-shell', 'jupyter', 'llm', 'z-extra-0', 'z-extra-1', 'z-extra-2', 'z-extra-3', 'z-extra-4']);
      expect(res.json().next_cursor).toBeNull();
      const llm = (res.json().items as Json[]).find((i) => i.name === 'llm');
      expect(llm).toEqual({
        template_id: ids.llm,
        kind: 'model',
        name: 'llm',
        description: 'llm template',
        vram_fit: { min_vram_bytes: (24n * GIB).toString(), recommended_vram_bytes: (40n * GIB).toString() },
        runtimes: [
          { backend: 'cuda', image_digest: digest('c') },
          { backend: 'rocm', image_digest: digest('d') },
        ],
        spec: {
          ports: [{ container_port: 8000, protocol: 'http', name: 'openai' }],
          environment: { MODEL: 'x' },
          engine: { name: 'vllm', model: 'm', api_port: 8000 },
        },
        // A model template runs community inference: the catalog says sensitive data must not be sent.
        tier: 'inference',
        data_notice: INFERENCE_DATA_NOTICE,
        published: true,
        created_at: t.clock.now().toISOString(),
        updated_at: t.clock.now().toISOString(),
      });
      // A credential changes nothing, and a bad one is ignored on a public route.
      expect(names(await get('/api/v1/templates?limit=100', renter.apiKey))).toEqual(names(res));
      expect(names(await get('/api/v1/templates?limit=100', 'ark_not_a_real_key'))).toEqual(names(res));
    });

    it('filters by kind, backend and min_vram_bytes', async () => {
      expect(names(await get('/api/v1/templates?kind=model'))).toEqual(['llm']);
      expect(names(await get('/api/v1/templates?kind=custom'))).toEqual(['jupyter']);
      expect(names(await get('/api/v1/templates?backend=rocm'))).toEqual(['jupyter', 'llm']);
      expect(names(await get('/api/v1/templates?backend=metal'))).toEqual([]);
      expect(names(await get(`/api/v1/templates?min_vram_bytes=${8n * GIB}&limit=3`))).toEqual(['cpu-shell', 'jupyter', 'z-extra-0']);
      expect(names(await get(`/api/v1/templates?min_vram_bytes=${8n * GIB - 1n}&limit=2`))).toEqual(['cpu-shell', 'z-extra-0']);
      expect(names(await get(`/api/v1/templates?min_vram_bytes=${'9'.repeat(30)}&kind=model&backend=cuda`))).toEqual(['llm']);
      expect(names(await get('/api/v1/templates?min_vram_bytes=0&kind=model'))).toEqual([]);
    });

    it('pages with opaque cursors until next_cursor is null', async () => {
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const res = await get(`/api/v1/templates?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        expect(res.statusCode).toBe(200);
        seen.push(...names(res));
        cursor = res.json().next_cursor;
        pages += 1;
      } while (cursor);
      expect(pages).toBe(3);
      expect(seen).toEqual(['cpu-shell', 'jupyter', 'llm', 'z-extra-0', 'z-extra-1', 'z-extra-2', 'z-extra-3', 'z-extra-4']);
      expect(names(await get('/api/v1/templates'))).toHaveLength(8);
    });

    it('refuses forged cursors, cursors of another filter, and bad queries with 422', async () => {
      const first = (await get('/api/v1/templates?limit=1')).json();
      const [body, signature] = (first.next_cursor as string).split('.');
      const forgedBody = Buffer.from(JSON.stringify({ s: 'templates:::', p: ['a', 'b'] })).toString('base64url');
      expectError(await get(`/api/v1/templates?cursor=${forgedBody}.${signature}`), 422, 'INVALID_CURSOR');
      expectError(await get(`/api/v1/templates?cursor=${body}`), 422, 'INVALID_CURSOR');
      expectError(await get(`/api/v1/templates?cursor=${first.next_cursor}&kind=model`), 422, 'INVALID_CURSOR');
      expect(expectError(await get('/api/v1/templates?limit=0'), 422, 'VALIDATION_FAILED')).toContain('limit');
      expect(expectError(await get('/api/v1/templates?limit=101'), 422, 'VALIDATION_FAILED')).toContain('limit');
      expect(expectError(await get('/api/v1/templates?kind=gpu'), 422, 'VALIDATION_FAILED')).toContain('kind');
      expect(expectError(await get('/api/v1/templates?backend=cpu'), 422, 'VALIDATION_FAILED')).toContain('backend');
      expect(expectError(await get('/api/v1/templates?min_vram_bytes=-1'), 422, 'VALIDATION_FAILED')).toContain('min_vram_bytes');
      expect(expectError(await get('/api/v1/templates?min_vram_bytes=1.5'), 422, 'VALIDATION_FAILED')).toContain('min_vram_bytes');
      expect(expectError(await get('/api/v1/templates?sort=name'), 422, 'VALIDATION_FAILED')).toContain('sort');
    });
  });

  describe('GET /api/v1/templates/{id}', () => {
    it('answers a published template and 404 for unpublished or unknown ids', async () => {
      const res = await get(`/api/v1/templates/${ids.llm}`);
      expect(res.statusCode).toBe(200);
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.json()).toMatchObject({ template_id: ids.llm, kind: 'model', published: true });
      expect((await get(`/api/v1/templates/${ids.llm?.toUpperCase()}`)).json().template_id).toBe(ids.llm);
      expectError(await get(`/api/v1/templates/${ids.unqualified}`), 404, 'TEMPLATE_NOT_FOUND');
      expectError(await get(`/api/v1/templates/${randomUUID()}`), 404, 'TEMPLATE_NOT_FOUND');
      expectError(await get('/api/v1/templates/not-a-uuid'), 422, 'VALIDATION_FAILED');
    });
  });

  describe('POST /api/v1/admin/templates/{id}/qualifications', () => {
    const qualify = (id: string, body: unknown, token?: string, key: string | null = randomUUID()) =>
      t.app.inject({
        method: 'POST',
        url: `/api/v1/admin/templates/${id}/qualifications`,
        headers: { ...(token ? bearer(token) : {}), ...(key ? { 'idempotency-key': key } : {}) },
        payload: body as object,
      });

    it('refuses anonymous callers, non-admins and admin API keys', async () => {
      const body = { machine_id: randomUUID(), reason: 'checked' };
      expectError(await qualify(ids.unqualified as string, body), 401, 'UNAUTHENTICATED');
      expectError(await qualify(ids.unqualified as string, body, renter.sessionToken), 403, 'ADMIN_SESSION_REQUIRED');
      expectError(await qualify(ids.unqualified as string, body, renter.apiKey), 403, 'ADMIN_SESSION_REQUIRED');
      expectError(await qualify(ids.unqualified as string, body, admin.apiKey), 403, 'ADMIN_SESSION_REQUIRED');
      expectError(await get(`/api/v1/templates/${ids.unqualified}`), 404, 'TEMPLATE_NOT_FOUND');
    });

    it('validates the body and needs an Idempotency-Key', async () => {
      const id = ids.unqualified as string;
      expect(
        expectError(await qualify(id, { machine_id: randomUUID(), reason: 'x' }, admin.sessionToken, null), 422, 'VALIDATION_FAILED'),
      ).toContain('idempotency-key');
      expectError(
        await t.app.inject({
          method: 'POST',
          url: `/api/v1/admin/templates/${id}/qualifications`,
          headers: { ...bearer(admin.sessionToken), 'idempotency-key': 'not-a-uuid' },
          payload: { machine_id: randomUUID(), reason: 'x' },
        }),
        422,
        'IDEMPOTENCY_KEY_REQUIRED',
      );
      expect(expectError(await qualify(id, { machine_id: 'nope', reason: 'x' }, admin.sessionToken), 422, 'VALIDATION_FAILED')).toContain(
        'machine_id',
      );
      expect(
        expectError(await qualify(id, { machine_id: randomUUID(), reason: '' }, admin.sessionToken), 422, 'VALIDATION_FAILED'),
      ).toContain('reason');
      expect(expectError(await qualify(id, { machine_id: randomUUID() }, admin.sessionToken), 422, 'VALIDATION_FAILED')).toContain(
        'reason',
      );
      expect(
        expectError(
          await qualify(id, { machine_id: randomUUID(), reason: 'x', source: 'agent' }, admin.sessionToken),
          422,
          'VALIDATION_FAILED',
        ),
      ).toContain('source');
      expectError(await qualify(randomUUID(), { machine_id: randomUUID(), reason: 'x' }, admin.sessionToken), 404, 'TEMPLATE_NOT_FOUND');
    });

    it('publishes the template, audits the admin and the reason, and replays a repeat', async () => {
      const id = ids.unqualified as string;
      const machine = await seedMachine(t.store.db, t.clock.now());
      const key = randomUUID();
      expect(
        expectError(await qualify(id, { machine_id: randomUUID(), reason: 'ran it by hand' }, admin.sessionToken), 404, 'NOT_FOUND'),
      ).toBe('No machine has this id.');
      const res = await qualify(id, { machine_id: machine.toUpperCase(), reason: 'ran it by hand' }, admin.sessionToken, key);
      expect(res.statusCode, res.body).toBe(201);
      expect(res.json()).toEqual({
        template_id: id,
        machine_id: machine,
        source: 'admin',
        qualified_at: t.clock.now().toISOString(),
        published: true,
      });
      expect((await get(`/api/v1/templates/${id}`)).statusCode).toBe(200);
      expect(names(await get('/api/v1/templates?limit=100'))).toContain('unqualified');

      const replay = await qualify(id, { machine_id: machine.toUpperCase(), reason: 'ran it by hand' }, admin.sessionToken, key);
      expect(replay.statusCode).toBe(201);
      expect(replay.headers['idempotent-replayed']).toBe('true');
      expect(replay.json()).toEqual(res.json());
      expectError(await qualify(id, { machine_id: machine, reason: 'different' }, admin.sessionToken, key), 409, 'IDEMPOTENCY_CONFLICT');

      const audit = await t.store.db
        .selectFrom('audit_log')
        .selectAll()
        .where('action', '=', 'template.qualify')
        .where('subject', '=', id)
        .execute();
      expect(audit).toHaveLength(1);
      expect(audit[0]?.actor_account_id).toBe(admin.accountId);
      expect(JSON.parse(audit[0]?.detail as string)).toEqual({ machine_id: machine, reason: 'ran it by hand', via: 'api' });
      const rows = await t.store.db.selectFrom('template_qualifications').selectAll().where('template_id', '=', id).execute();
      expect(rows).toMatchObject([{ machine_id: machine, source: 'admin' }]);
    });
  });

  it('documents the routes in the OpenAPI document', async () => {
    const doc = (await get('/openapi.json')).json();
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(['/api/v1/templates', '/api/v1/templates/{id}', '/api/v1/admin/templates/{id}/qualifications']),
    );
    expect(doc.paths['/api/v1/templates'].get.security).toEqual([]);
  });
});
