// The interactive API reference (issue 13, item 3) on a really listening control plane: /docs is Swagger UI served
// from this origin only (every asset the page names is fetched from the server itself and nothing else is named,
// the validator badge is off, the page's policy admits no other origin), over the generated document, in which every
// operation has a description, the error codes it can answer per status (each a catalog code of that status), and
// an example for its JSON body that its own schema accepts.
import { ERROR_CATALOG, type ErrorCode } from '@ark/shared';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../clock.js';
import { createTestApp, type TestApp } from '../testing/app.js';
import { DOCS_PAGE_POLICY } from './api-reference.js';
import { statusesOf } from './openapi-docs.js';

type Json = Record<string, any>;

describe('the API reference at /docs', () => {
  let t: TestApp<ManualClock>;
  let base: string;
  let doc: Json;

  beforeAll(async () => {
    t = await createTestApp('sqlite');
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const address = t.app.server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    base = `http://127.0.0.1:${address.port}`;
    doc = (await (await fetch(`${base}/openapi.json`)).json()) as Json;
  });
  afterAll(async () => {
    await t?.destroy();
  });

  const operations = () =>
    Object.entries<Json>(doc.paths).flatMap(([path, item]) =>
      Object.entries<Json>(item)
        .filter(([method]) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
        .map(([method, op]) => ({ key: `${method.toUpperCase()} ${path}`, path, op })),
    );

  it('serves Swagger UI whose every asset comes from this server, under a policy that admits no other origin', async () => {
    const page = await fetch(`${base}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('content-security-policy')).toBe(DOCS_PAGE_POLICY);
    expect(page.headers.get('x-content-type-options')).toBe('nosniff');
    for (const directive of DOCS_PAGE_POLICY.split('; ')) {
      for (const source of directive.split(' ').slice(1)) expect(["'self'", "'none'", 'data:'], directive).toContain(source);
    }
    const html = await page.text();
    // No inline script or style: the policy needs no hash and no 'unsafe-inline'.
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>\s*\S/);
    expect(html).not.toMatch(/<style|\sstyle=/);
    const assets = [...html.matchAll(/\s(?:src|href)="([^"]+)"/g)].map((m) => m[1] as string);
    expect(assets.length).toBeGreaterThanOrEqual(5);
    for (const asset of assets) {
      const url = new URL(asset, `${base}/docs`);
      expect(url.origin, asset).toBe(base);
      const answer = await fetch(url);
      expect(answer.status, asset).toBe(200);
      const body = await answer.text();
      if (asset.endsWith('.css')) expect(body.match(/url\((?!["']?data:)[^)]*\)/g) ?? [], asset).toEqual([]);
      if (asset.endsWith('swagger-initializer.js')) {
        expect(body).toContain('validatorUrl: null');
        // No address of another site outside comments.
        const code = body.replace(/^\s*\/\/.*$/gm, '');
        expect(code).not.toMatch(/https?:\/\//);
      }
    }
    expect(assets.some((a) => a.endsWith('swagger-ui-bundle.js'))).toBe(true);
    // The document the page loads is the one /openapi.json serves.
    expect(await (await fetch(`${base}/docs/json`)).json()).toEqual(doc);
  });

  it('keeps the reference out of the document it shows, and needs no credential', async () => {
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/docs') || p === '/mcp')).toEqual([]);
    const withBadKey = await fetch(`${base}/docs`, { headers: { authorization: 'Bearer ark_nonsense' } });
    expect(withBadKey.status).toBe(200);
  });

  it('gives every operation a tag and a unique, stable operationId (client generators name methods after it)', () => {
    const ids = new Map<string, string>();
    for (const { key, op } of operations()) {
      expect(op.tags, key).toEqual(expect.arrayContaining([expect.stringMatching(/^[a-z][a-z0-9-]*$/)]));
      expect(op.operationId, key).toMatch(/^(get|post|put|patch|delete)[A-Z][A-Za-z0-9]*$/);
      expect(ids.get(op.operationId), `${key} and ${ids.get(op.operationId)} share ${op.operationId}`).toBeUndefined();
      ids.set(op.operationId, key);
    }
    // Nothing lands under Swagger UI's "default" group.
    expect(operations().filter(({ op }) => op.tags.includes('default'))).toEqual([]);
    // The id follows from the method and the path, so it stays put when a route's code changes.
    expect(doc.paths['/api/v1/jobs/{id}/events'].get.operationId).toBe('getJobsByIdEvents');
    expect(doc.paths['/api/v1/jobs'].post.operationId).toBe('postJobs');
  });

  it('gives every operation a description with its requirement and error codes', () => {
    expect(operations().length).toBeGreaterThan(60);
    for (const { key, op } of operations()) {
      expect(typeof op.description, key).toBe('string');
      expect(op.description.length, key).toBeGreaterThan((op.summary ?? '').length);
      expect(op.description, key).toMatch(/No credential needed\.|Needs /);
      expect(op.description, key).toContain('| Status | Codes |');
    }
  });

  it('names the error codes of every error status, each a catalog code of that status, with an example envelope', () => {
    for (const { key, path, op } of operations()) {
      const named = new Set<string>();
      for (const [status, response] of Object.entries<Json>(op.responses)) {
        if (Number(status) < 400) continue;
        const codes = response['x-ark-error-codes'] as ErrorCode[];
        expect(Array.isArray(codes), `${key} ${status}`).toBe(true);
        for (const code of codes) {
          expect(code in ERROR_CATALOG, `${key} ${code}`).toBe(true);
          expect(statusesOf(code), `${key} ${status} ${code}`).toContain(Number(status));
          const example = response.content['application/json'].examples[code].value;
          expect(example.error.code).toBe(code);
          expect(example.error.retryable).toBe(ERROR_CATALOG[code].retryable);
          named.add(code);
        }
      }
      expect(named.has('VALIDATION_FAILED'), key).toBe(true);
      expect(named.has('UNAVAILABLE'), key).toBe(true);
      const auth = op['x-ark-auth'] as Json | undefined;
      if (auth) expect(op.responses['401']['x-ark-error-codes'], key).toContain('UNAUTHENTICATED');
      if (auth?.scope) expect(op.responses['403']['x-ark-error-codes'], key).toContain('SCOPE_REQUIRED');
      if (auth?.admin) expect(op.responses['403']['x-ark-error-codes'], key).toContain('ADMIN_SESSION_REQUIRED');
      if (path.includes('{')) expect(op.responses['404']['x-ark-error-codes'], key).toContain('NOT_FOUND');
      if ((op.parameters ?? []).some((p: Json) => p.name === 'idempotency-key')) {
        expect(op.responses['409']['x-ark-error-codes'], key).toEqual(expect.arrayContaining(['IDEMPOTENCY_CONFLICT']));
        expect(op.responses['422']['x-ark-error-codes'], key).toContain('IDEMPOTENCY_KEY_REQUIRED');
      }
    }
    // The services' own refusals, for the reservation.
    const reserve = doc.paths['/api/v1/jobs'].post.responses;
    expect(reserve['409']['x-ark-error-codes']).toEqual(
      expect.arrayContaining(['QUOTE_EXPIRED', 'QUOTE_ALREADY_USED', 'INSUFFICIENT_BALANCE', 'SPEND_RATE_CAP_EXCEEDED']),
    );
    expect(reserve['503']['x-ark-error-codes']).toContain('ADMISSIONS_PAUSED');
    expect(doc.paths['/api/v1/jobs'].post.description).toContain('`QUOTE_EXPIRED`');
  });

  it('gives every JSON request body an example that its own schema accepts', async () => {
    const ajv = new Ajv.default({ strict: false, allErrors: true });
    addFormats.default(ajv);
    let bodies = 0;
    const refused: string[] = [];
    for (const { key, op } of operations()) {
      const media = op.requestBody?.content?.['application/json'];
      if (!media) continue;
      bodies++;
      const examples = Object.values<Json>(media.examples ?? {});
      expect(examples.length, key).toBeGreaterThan(0);
      const validate = ajv.compile({ ...media.schema, components: doc.components });
      for (const example of examples) {
        if (!validate(example.value)) refused.push(`${key}: ${JSON.stringify(example.value)} ${JSON.stringify(validate.errors)}`);
      }
    }
    expect(refused).toEqual([]);
    expect(bodies).toBeGreaterThan(25);
    // The quote's example is a real request: the API reads it and answers that no such offer is listed.
    const quote = doc.paths['/api/v1/quotes'].post.requestBody.content['application/json'].examples.example.value;
    const { seedAccount, bearer } = await import('../testing/app.js');
    const renter = await seedAccount(t.ctx);
    const answer = await fetch(`${base}/api/v1/quotes`, {
      method: 'POST',
      headers: { ...bearer(renter.apiKey), 'content-type': 'application/json', 'idempotency-key': crypto.randomUUID() },
      body: JSON.stringify(quote),
    });
    expect(answer.status).toBe(404);
    expect(((await answer.json()) as Json).error.code).toBe('OFFER_NOT_FOUND');
  });
});
