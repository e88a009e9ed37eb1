// Every route declares who may call it, reads included (issue 7, item 3): a route that declares neither a
// requirement nor that it is public fails at registration; every operation of /openapi.json states its requirement
// (none for public ones, the bearer with its scope otherwise); and a key without an operation's scope is refused
// 403 SCOPE_REQUIRED before anything is read, whatever the id. The whole caller-by-operation table is in
// authorization-matrix.test.ts.
import { randomUUID } from 'node:crypto';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../clock.js';
import { bearer, createTestApp, type SeededAccount, seedAccount, type TestApp } from '../testing/app.js';
import { enrollDirect } from '../testing/hosting.js';
import { DIALECTS } from '../testing/stores.js';
import { installAuth } from './auth.js';

type Json = Record<string, any>;

describe('a route without a declared requirement', () => {
  it('fails at registration, naming the route; declared ones register', async () => {
    const app = Fastify();
    installAuth(app, { authenticate: () => null }, new ManualClock());
    expect(() => app.get('/test/undeclared', async () => ({ ok: true }))).toThrow(/GET \/test\/undeclared declares no config\.auth/);
    expect(() => app.post('/test/idempotent', { config: { idempotent: true } }, async () => ({ ok: true }))).toThrow(
      /POST \/test\/idempotent/,
    );
    app.get('/test/public', { config: { auth: 'public' } }, async () => ({ ok: true }));
    app.get('/test/any', { config: { auth: {} } }, async () => ({ ok: true }));
    app.get('/test/host', { config: { auth: { scope: 'host' } } }, async () => ({ ok: true }));
    await app.ready();
    expect((await app.inject({ method: 'GET', url: '/test/public' })).statusCode).toBe(200);
    await app.close();
  });
});

describe.each(DIALECTS)('declared requirements on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  let doc: Json;
  let host: SeededAccount;
  let machineId: string;
  /** A key of the host's own account for each single scope: what it lacks is the only reason to refuse it. */
  const keyWith: Record<'renter' | 'host', string> = { renter: '', host: '' };

  beforeAll(async () => {
    t = await createTestApp(dialect);
    host = await seedAccount(t.ctx, { role: 'host', stepUp: true });
    machineId = await enrollDirect(t.app, host);
    for (const scope of ['renter', 'host'] as const) {
      const created = await t.app.inject({
        method: 'POST',
        url: '/api/v1/account/api-keys',
        headers: { ...bearer(host.sessionToken), 'idempotency-key': randomUUID() },
        payload: { label: scope, scopes: [scope] },
      });
      expect(created.statusCode, created.body).toBe(201);
      keyWith[scope] = created.json().secret;
    }
    doc = (await t.app.inject({ method: 'GET', url: '/openapi.json' })).json() as Json;
  });
  afterAll(async () => {
    await t?.destroy();
  });

  const operations = () =>
    Object.entries<Json>(doc.paths).flatMap(([path, item]) =>
      Object.entries<Json>(item)
        .filter(([method]) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
        .map(([method, op]) => ({ method: method.toUpperCase(), path, op })),
    );

  it('states each operation’s requirement in the document: none for public ones, else the bearer and its scope', () => {
    expect(operations().length).toBeGreaterThan(40);
    for (const { method, path, op } of operations()) {
      const where = `${method} ${path}`;
      expect(Array.isArray(op.security), `${where} states no security`).toBe(true);
      if (op.security.length === 0) {
        expect(op['x-ark-auth'], where).toBeUndefined();
        continue;
      }
      expect(op.security, where).toHaveLength(1);
      const scopes = op.security[0].bearer as string[];
      expect(
        scopes.every((s) => s === 'renter' || s === 'host'),
        where,
      ).toBe(true);
      expect(op['x-ark-auth'], where).toBeTypeOf('object');
      expect(op['x-ark-auth'].scope ?? null, where).toBe(scopes[0] ?? null);
      expect(op.responses['401'], `${where} documents 401`).toBeDefined();
    }
  });

  it('refuses a key without the operation’s scope 403 SCOPE_REQUIRED, for a real resource and a missing one alike', async () => {
    let checked = 0;
    for (const { method, path, op } of operations()) {
      const scope = op.security?.[0]?.bearer?.[0] as 'renter' | 'host' | undefined;
      if (!scope || op['x-ark-auth']?.admin) continue;
      const other = scope === 'renter' ? 'host' : 'renter';
      for (const id of [machineId, randomUUID()]) {
        const url = path.replace(/\{[a-z_]+\}/g, path.includes('integrations') ? 'model-hub' : id);
        const res = await t.app.inject({
          method: method as 'GET',
          url,
          headers: { ...bearer(keyWith[other]), 'idempotency-key': randomUUID() },
        });
        // A machine's routes judge ownership first: an id nobody owns is 404 whatever the key (owner-first.ts).
        const missingOwned = op['x-ark-auth']?.owner === 'machine' && id !== machineId;
        expect(res.statusCode, `${method} ${url}: ${res.body}`).toBe(missingOwned ? 404 : 403);
        expect(res.json().error.code, `${method} ${url}`).toBe(missingOwned ? 'NOT_FOUND' : 'SCOPE_REQUIRED');
        expect(res.json().error.request_id).toBe(res.headers['x-request-id']);
      }
      checked++;
    }
    // The reads of issue 7 are among them.
    expect(checked).toBeGreaterThan(15);
    for (const url of ['/api/v1/hosts/machines', `/api/v1/hosts/machines/${machineId}`, `/api/v1/hosts/machines/${machineId}/telemetry`]) {
      const res = await t.app.inject({ method: 'GET', url, headers: bearer(keyWith.renter) });
      expect(res.json().error?.code, url).toBe('SCOPE_REQUIRED');
      expect((await t.app.inject({ method: 'GET', url, headers: bearer(keyWith.host) })).statusCode, url).toBe(200);
    }
  });
  it('answers a stranger 404 on each machine route whatever its key’s scopes, and the owner 403 for what its key lacks (issue 22)', async () => {
    const stranger = await seedAccount(t.ctx, { role: 'host', stepUp: true });
    const created = await t.app.inject({
      method: 'POST',
      url: '/api/v1/account/api-keys',
      headers: { ...bearer(stranger.sessionToken), 'idempotency-key': randomUUID() },
      payload: { label: 'renter only', scopes: ['renter'] },
    });
    expect(created.statusCode, created.body).toBe(201);
    const strangerRenterKey = created.json().secret as string;
    const machineRoutes = operations().filter(({ op }) => op['x-ark-auth']?.owner === 'machine');
    expect(machineRoutes.map(({ method, path }) => `${method} ${path}`).sort()).toEqual([
      'GET /api/v1/hosts/machines/{id}',
      'GET /api/v1/hosts/machines/{id}/telemetry',
      'POST /api/v1/hosts/machines/{id}/cpu-listing',
      'POST /api/v1/hosts/machines/{id}/go-live',
      'POST /api/v1/hosts/machines/{id}/nettest',
      'POST /api/v1/hosts/machines/{id}/offer',
      'POST /api/v1/hosts/machines/{id}/selftest',
    ]);
    const send = (method: string, path: string, id: string, key: string) =>
      t.app.inject({
        method: method as 'GET',
        url: path.replace('{id}', id),
        headers: { ...bearer(key), 'idempotency-key': randomUUID() },
      });
    for (const { method, path } of machineRoutes) {
      const where = `${method} ${path}`;
      // Someone else's machine and a machine nobody has read the same to a stranger's renter-only key.
      for (const id of [machineId, randomUUID()]) {
        const res = await send(method, path, id, strangerRenterKey);
        expect(res.statusCode, `${where} ${res.body}`).toBe(404);
        expect(res.json().error.code, where).toBe('NOT_FOUND');
        expect(res.json().error.request_id).toBe(res.headers['x-request-id']);
      }
      const own = await send(method, path, machineId, keyWith.renter);
      expect(own.statusCode, `${where} ${own.body}`).toBe(403);
      expect(own.json().error.code, where).toBe('SCOPE_REQUIRED');
    }
  });
});
