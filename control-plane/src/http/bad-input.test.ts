// Bad input (issue 2 §7): walks every operation of the OpenAPI document and sends malformed JSON, wrong types,
// extra and missing properties, oversized strings and bodies, invalid query strings and path parameters, missing
// and wrong credentials, and credentials that lack what the route declares. Every answer must be the exact error
// envelope with the expected status, never a 5xx, and no table of the store may change (audit_log included).
//
// The walker is generic: what a route needs (auth, idempotency) is read from the route's own `config` as Fastify
// resolved it (captured by an onSend hook on the first request), and bodies, queries and path parameters are
// derived from the OpenAPI schemas. A request is only sent when it can have no effect: every mutated body or query
// is first checked to be invalid against the route's own schema (so the handler is never reached), and the only
// well-formed requests are reads (GET) and DELETEs of random ids.
//
// Not walked, on purpose (they are hidden from the OpenAPI document): the agent channel WebSocket route, the
// browser-facing GET /verify-email page, /healthz, /readyz, /metrics and /openapi.json themselves.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { ERROR_CATALOG, ErrorEnvelope } from '@ark/shared';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import type { FastifyContextConfig } from 'fastify';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../clock.js';
import type { Store } from '../store/db.js';
import { bearer, createTestApp, type SeededAccount, seedAccount, seedAgent, type TestApp } from '../testing/app.js';
import { pairMachine } from '../testing/hosting.js';
import { DIALECTS } from '../testing/stores.js';
import type { AuthRequirement } from './principal.js';

type Schema = Record<string, any>;
type Json = Record<string, any>;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Statuses every route may answer whatever it documents: the wire rules of contract part 1. */
const WIRE_STATUSES = new Set([401, 404, 405, 413, 415, 422, 429]);
const AUTHZ_CODES = [
  'FORBIDDEN',
  'SCOPE_REQUIRED',
  'ADMIN_SESSION_REQUIRED',
  'STEP_UP_REQUIRED',
  'STEP_UP_TOTP_REQUIRED',
  'EMAIL_NOT_VERIFIED',
];
/** A message that leaks internals: a stack frame, SQL, a driver or a JS error name. */
const LEAK = /\n\s+at |\bat .+:\d+:\d+|SELECT |INSERT |UPDATE |sqlite|postgres|syntax error|TypeError|ReferenceError|undefined|\[object /i;

// The same Ajv settings as validation.ts: bodies strict without coercion, query strings coerced from text.
const makeAjv = (coerce: boolean) => {
  const ajv = new Ajv.default({ coerceTypes: coerce ? 'array' : false, useDefaults: false, strict: false, allErrors: false });
  addFormats.default(ajv);
  return ajv;
};
const bodyAjv = makeAjv(false);
const textAjv = makeAjv(true);
const validEnvelope = bodyAjv.compile(ErrorEnvelope);

interface Param {
  name: string;
  required: boolean;
  schema: Schema;
}

interface Operation {
  method: string;
  /** OpenAPI form: /api/v1/x/{id} */
  path: string;
  pathParams: Param[];
  query: Param[];
  headers: Param[];
  body: Schema | null;
  documented: Set<number>;
  /** The OpenAPI document says no credential is needed (`security: []`). */
  documentedPublic: boolean;
}

interface Answer {
  status: number;
  headers: Record<string, unknown>;
  body: string;
}

interface Case {
  name: string;
  method: string;
  url: string;
  headers: Record<string, string>;
  payload?: string;
  /** Allowed statuses; 'ok' allows any 2xx. */
  expect: Array<number | 'ok'>;
  /** Allowed envelope codes when the answer is an error (default: any code whose catalog status matches). */
  codes?: string[];
  /** The error message must name this field. */
  names?: string;
}

interface Finding {
  route: string;
  case: string;
  problem: string;
  request: { method: string; url: string; headers: Record<string, string>; payload?: string };
  answer: { status: number; body: string };
}

/**
 * Findings in code this test does not own, reported to its owners and tolerated here until fixed, so the walk stays
 * useful for everything else. Each entry is printed while it still reproduces; delete it once it no longer does.
 */
// Findings the walker tolerates, each with its reason. Empty: every answer is right.
const KNOWN_ISSUES: Array<{ route?: RegExp; case?: RegExp; problem: RegExp; why: string }> = [];

const knownIssue = (f: { route: string; case: string; problem: string }) =>
  KNOWN_ISSUES.find((k) => (!k.route || k.route.test(f.route)) && (!k.case || k.case.test(f.case)) && k.problem.test(f.problem));

// ---------------------------------------------------------------------------------------------------------------
// OpenAPI reading

function deref(doc: Json, schema: Schema, seen = new Set<string>()): Schema {
  if (schema === null || typeof schema !== 'object') return schema;
  if (Array.isArray(schema)) return schema.map((s) => deref(doc, s, seen)) as unknown as Schema;
  if (typeof schema.$ref === 'string') {
    const name = schema.$ref.split('/').pop() as string;
    if (seen.has(name)) return {};
    const target = doc.components?.schemas?.[name];
    if (!target) throw new Error(`unresolved $ref ${schema.$ref}`);
    return deref(doc, target, new Set([...seen, name]));
  }
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema))
    out[key] = key === 'properties' ? mapValues(value, (v) => deref(doc, v, seen)) : deref(doc, value, seen);
  return out;
}

const mapValues = (object: Json, f: (v: any) => any): Json => Object.fromEntries(Object.entries(object).map(([k, v]) => [k, f(v)]));

function operationsOf(doc: Json): Operation[] {
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
    for (const [method, op] of Object.entries<Json>(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const params: Array<Param & { in: string }> = (op.parameters ?? []).map((p: Json) => ({
        name: p.name,
        in: p.in,
        required: p.required === true,
        schema: deref(doc, p.schema ?? {}),
      }));
      const json = op.requestBody?.content?.['application/json']?.schema;
      operations.push({
        method: method.toUpperCase(),
        path,
        pathParams: params.filter((p) => p.in === 'path'),
        query: params.filter((p) => p.in === 'query'),
        headers: params.filter((p) => p.in === 'header'),
        body: json ? deref(doc, json) : null,
        documented: new Set(Object.keys(op.responses ?? {}).map(Number)),
        documentedPublic: Array.isArray(op.security) && op.security.length === 0,
      });
    }
  }
  return operations;
}

// ---------------------------------------------------------------------------------------------------------------
// Valid samples and invalid mutations, derived from the schemas

class Unsampleable extends Error {}

const typeOf = (schema: Schema): string | undefined => {
  const t = schema.type;
  if (Array.isArray(t)) return t.find((x: string) => x !== 'null');
  return t ?? (schema.properties ? 'object' : undefined);
};

function sampleString(schema: Schema): string {
  const min = schema.minLength ?? 0;
  const candidates = [
    randomUUID(),
    '2030-01-01T00:00:00.000Z',
    'walker@example.test',
    '1',
    '123456',
    `0x${'ab'.repeat(20)}`,
    `${'A'.repeat(43)}=`,
    'base',
    `sha256:${'a'.repeat(64)}`,
    'https://example.test/x',
    'abc',
    '1h',
    'a'.repeat(Math.max(1, min)),
  ];
  const found = candidates.find((c) => bodyAjv.validate(schema, c));
  if (found === undefined) throw new Unsampleable(`no sample for ${JSON.stringify(schema)}`);
  return found;
}

/** A small valid value for `schema`, or Unsampleable. */
function sample(schema: Schema): unknown {
  if ('const' in schema) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  const options = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(options)) {
    for (const option of options) {
      try {
        const value = sample(option);
        if (bodyAjv.validate(schema, value)) return value;
      } catch (error) {
        if (!(error instanceof Unsampleable)) throw error;
      }
    }
    throw new Unsampleable('no anyOf option sampled');
  }
  switch (typeOf(schema)) {
    case 'string':
      return sampleString(schema);
    case 'integer':
    case 'number': {
      let value = schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : 1);
      if (schema.maximum !== undefined && value > schema.maximum) value = schema.maximum;
      return value;
    }
    case 'boolean':
      return true;
    case 'null':
      return null;
    case 'array': {
      const n = schema.minItems ?? 0;
      return Array.from({ length: n }, () => sample(schema.items ?? {}));
    }
    case 'object': {
      const out: Json = {};
      const properties: Json = schema.properties ?? {};
      for (const name of schema.required ?? []) out[name] = sample(properties[name] ?? {});
      for (const name of Object.keys(properties)) {
        if (Object.keys(out).length >= (schema.minProperties ?? 0)) break;
        if (!(name in out)) out[name] = sample(properties[name]);
      }
      return out;
    }
    default:
      return 'x';
  }
}

function trySample(schema: Schema): { ok: true; value: unknown } | { ok: false } {
  try {
    const value = sample(schema);
    return bodyAjv.validate(schema, value) ? { ok: true, value } : { ok: false };
  } catch (error) {
    if (error instanceof Unsampleable) return { ok: false };
    throw error;
  }
}

/** Values of another type than `schema` accepts (the caller keeps only those the schema refuses). */
function wrongTypes(schema: Schema): unknown[] {
  switch (typeOf(schema)) {
    case 'string':
      return [12345, true];
    case 'integer':
      return ['x', 1.5];
    case 'number':
      return ['x'];
    case 'boolean':
      return ['yes', 1];
    case 'array':
      return ['x', {}];
    case 'object':
      return ['x', []];
    default:
      return [12345, 'x', {}];
  }
}

/** Values too large for `schema`: maxLength + 1, or 100 KB where no maxLength bounds it; maxItems + 1. */
function oversized(schema: Schema, base: unknown): unknown[] {
  const t = typeOf(schema);
  if (t === 'string') {
    const length = schema.maxLength !== undefined ? schema.maxLength + 1 : 100 * 1024;
    // Keep the sample's alphabet, so only the length is wrong.
    const seed = typeof base === 'string' && base.length > 0 ? base : 'a';
    return [seed.repeat(Math.ceil(length / seed.length)).slice(0, Math.max(length, seed.length + 1))];
  }
  if (t === 'array' && Array.isArray(base) && base.length > 0) {
    const n = schema.maxItems !== undefined ? schema.maxItems + 1 : 10_000;
    return [Array.from({ length: n }, () => base[0])];
  }
  if ((t === 'integer' || t === 'number') && schema.maximum !== undefined) return [schema.maximum + 1];
  if ((t === 'integer' || t === 'number') && schema.minimum !== undefined) return [schema.minimum - 1];
  return [];
}

type PathKey = Array<string | number>;

function setAt(value: unknown, path: PathKey, leaf: unknown, remove = false): unknown {
  const root = structuredClone(value) as any;
  let node = root;
  for (const key of path.slice(0, -1)) node = node[key];
  const last = path[path.length - 1] as string | number;
  if (remove) delete node[last];
  else node[last] = leaf;
  return root;
}

interface BodyMutation {
  name: string;
  body: unknown;
  names?: string;
}

const getAt = (value: unknown, path: PathKey): unknown => path.reduce<any>((node, key) => (node == null ? undefined : node[key]), value);

/** Mutations of a valid body (`root`), one field at a time, walking nested objects and the first item of arrays. */
function bodyMutations(schema: Schema, root: unknown, path: PathKey = [], depth = 0): BodyMutation[] {
  const out: BodyMutation[] = [];
  if (depth > 4 || schema === null || typeof schema !== 'object') return out;
  const t = typeOf(schema);
  const here = getAt(root, path);
  if (t === 'object' && here !== null && typeof here === 'object' && !Array.isArray(here)) {
    const label = (name?: string) => [...path, ...(name ? [name] : [])].join('/') || 'body';
    const full = schema.maxProperties !== undefined && Object.keys(here).length >= schema.maxProperties;
    out.push({
      name: `extra property in ${label()}`,
      body: setAt(root, [...path, '__unexpected'], 1),
      ...(full ? {} : { names: '__unexpected' }),
    });
    const properties: Json = schema.properties ?? {};
    for (const name of schema.required ?? []) {
      out.push({ name: `missing required ${label(name)}`, body: setAt(root, [...path, name], undefined, true), names: name });
    }
    for (const [name, propSchema] of Object.entries<Schema>(properties)) {
      const at = [...path, name];
      const current = (here as Json)[name];
      // Adding a property to an object already at maxProperties fails on the count, which names no field.
      const full = current === undefined && schema.maxProperties !== undefined && Object.keys(here).length >= schema.maxProperties;
      const names = full ? {} : { names: name };
      for (const wrong of wrongTypes(propSchema))
        out.push({ name: `wrong type ${label(name)}=${JSON.stringify(wrong)}`, body: setAt(root, at, wrong), ...names });
      out.push({ name: `null ${label(name)}`, body: setAt(root, at, null), ...names });
      for (const big of oversized(propSchema, current ?? trySampleValue(propSchema))) {
        out.push({ name: `oversized ${label(name)}`, body: setAt(root, at, big), ...names });
      }
      if (current !== undefined) out.push(...bodyMutations(propSchema, root, at, depth + 1));
    }
  } else if (t === 'array' && Array.isArray(here) && here.length > 0 && schema.items) {
    out.push(...bodyMutations(schema.items, root, [...path, 0], depth + 1));
  }
  return out;
}

function trySampleValue(schema: Schema): unknown {
  const s = trySample(schema);
  return s.ok ? s.value : undefined;
}

/** Query values (text) for every required parameter, valid against their schemas. */
function sampleQuery(params: Param[]): Record<string, string> | null {
  const out: Record<string, string> = {};
  for (const p of params.filter((q) => q.required)) {
    const s = trySample(p.schema);
    if (!s.ok) return null;
    out[p.name] = String(s.value);
  }
  return out;
}

function queryValid(params: Param[], query: Record<string, string>): boolean {
  const schema = {
    type: 'object',
    properties: Object.fromEntries(params.map((p) => [p.name, p.schema])),
    required: params.filter((p) => p.required).map((p) => p.name),
  };
  return textAjv.validate(schema, structuredClone(query));
}

function queryMutations(
  params: Param[],
  base: Record<string, string>,
): Array<{ name: string; query: Record<string, string>; names: string }> {
  const out: Array<{ name: string; query: Record<string, string>; names: string }> = [];
  for (const p of params) {
    const candidates: string[] = ['', 'x', '1.5', '-1', '0', '!!', 'a'.repeat(10_000)];
    if (p.schema.minimum !== undefined) candidates.push(String(p.schema.minimum - 1));
    if (p.schema.maximum !== undefined) candidates.push(String(p.schema.maximum + 1));
    if (p.schema.maxLength !== undefined) candidates.push('a'.repeat(p.schema.maxLength + 1));
    for (const value of new Set(candidates)) {
      const query = { ...base, [p.name]: value };
      if (!queryValid(params, query))
        out.push({
          name: `query ${p.name}=${value.length > 20 ? `${value.slice(0, 8)}...(${value.length})` : JSON.stringify(value)}`,
          query,
          names: p.name,
        });
    }
  }
  for (const p of params.filter((q) => q.required)) {
    const query = { ...base };
    delete query[p.name];
    out.push({ name: `query missing ${p.name}`, query, names: p.name });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// The store: row counts and a hash of every row of every table

const canonical = (value: unknown): string =>
  JSON.stringify(value, (_k, v) => {
    if (typeof v === 'bigint') return `${v}n`;
    if (v instanceof Date) return v.toISOString();
    if (v && typeof v === 'object' && v.type === 'Buffer' && Array.isArray(v.data)) return Buffer.from(v.data).toString('hex');
    if (v instanceof Uint8Array) return Buffer.from(v).toString('hex');
    if (v && typeof v === 'object' && !Array.isArray(v))
      return Object.fromEntries(
        Object.keys(v)
          .sort()
          .map((k) => [k, v[k]]),
      );
    return v;
  });

type Snapshot = Map<string, { rows: number; hash: string }>;

async function tableNames(store: Store): Promise<string[]> {
  const rows =
    store.dialect === 'sqlite'
      ? await sql<{ name: string }>`select name from sqlite_master where type = 'table' and name not like 'sqlite_%'`.execute(store.db)
      : await sql<{
          name: string;
        }>`select table_name as name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE'`.execute(
          store.db,
        );
  return rows.rows.map((r) => r.name).sort();
}

async function snapshot(store: Store): Promise<Snapshot> {
  const out: Snapshot = new Map();
  for (const table of await tableNames(store)) {
    const { rows } = await sql<Json>`select * from ${sql.table(table)}`.execute(store.db);
    const lines = rows.map(canonical).sort();
    out.set(table, { rows: rows.length, hash: createHash('sha256').update(lines.join('\n')).digest('hex') });
  }
  return out;
}

function diff(before: Snapshot, after: Snapshot): string[] {
  const changed: string[] = [];
  for (const table of new Set([...before.keys(), ...after.keys()])) {
    const a = before.get(table);
    const b = after.get(table);
    if (a?.hash !== b?.hash) changed.push(`${table} (${a?.rows ?? 'absent'} -> ${b?.rows ?? 'absent'} rows)`);
  }
  return changed;
}

// ---------------------------------------------------------------------------------------------------------------

const decodeOrSelf = (text: string) => {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
};
const randomAddress = () => `127.${randomBytes(1)[0]}.${randomBytes(1)[0]}.${1 + ((randomBytes(1)[0] as number) % 254)}`;
const JSON_TYPE = { 'content-type': 'application/json' };

describe.each(DIALECTS)('bad input on every route on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  /** Route configs as Fastify resolved them, keyed by `METHOD /url/:param`. */
  const configs = new Map<string, FastifyContextConfig>();
  let doc: Json;
  let user: SeededAccount;
  let admin: SeededAccount;
  const creds: Record<string, string> = {};
  /** Ids of real resources for path parameters, by OpenAPI path prefix. */
  const seededIds: Array<{ prefix: string; id: string }> = [];

  beforeAll(async () => {
    t = await createTestApp(dialect, {
      configOverrides: { authAttemptsPerMinute: 10_000 },
      extraRoutes(app) {
        app.addHook('onSend', async (request, _reply, payload) => {
          if (request.routeOptions.url) configs.set(`${request.method} ${request.routeOptions.url}`, request.routeOptions.config);
          return payload;
        });
      },
    });
    const { ctx } = t;
    user = await seedAccount(ctx, { role: 'host', withTotp: true, stepUp: true });
    admin = await seedAccount(ctx, { role: 'admin', withTotp: true, stepUp: true });
    const noStepUp = await seedAccount(ctx, { role: 'host', withTotp: true });
    const passwordStepUp = await seedAccount(ctx, { role: 'host', stepUp: true });
    const unverified = await seedAccount(ctx, { role: 'host', verified: false, withTotp: true, stepUp: true });
    const renterOnly = await seedAccount(ctx, { role: 'host', scopes: ['renter'], withTotp: true, stepUp: true });
    const hostOnly = await seedAccount(ctx, { role: 'host', scopes: ['host'], withTotp: true, stepUp: true });
    const revoked = await seedAccount(ctx, { role: 'host' });
    // A person's key takes no password step-up: the key admitted wherever a key may go is an agent's, stepped up by
    // its sign-in wallet.
    const agent = await seedAgent(ctx, { keys: [['renter', 'host']] });
    Object.assign(creds, {
      session: user.sessionToken,
      key: agent.apiKeys[0],
      adminSession: admin.sessionToken,
      adminKey: admin.apiKey,
      noStepUp: noStepUp.sessionToken,
      passwordStepUp: passwordStepUp.sessionToken,
      unverified: unverified.sessionToken,
      renterKey: renterOnly.apiKey,
      hostKey: hostOnly.apiKey,
      revokedKey: revoked.apiKey,
      revokedSession: revoked.sessionToken,
    });

    // Real resources, so path parameters also name things that exist.
    const machine = await pairMachine(t.app, user);
    seededIds.push({ prefix: '/api/v1/hosts/machines/{id}', id: machine.machineId });
    seededIds.push({ prefix: '/api/v1/account/api-keys/{id}', id: user.apiKeyId });
    const address = await t.app.inject({
      method: 'POST',
      url: '/api/v1/withdrawal-addresses',
      headers: { ...bearer(user.sessionToken), 'idempotency-key': randomUUID() },
      payload: { address: `0x${randomBytes(20).toString('hex')}` },
    });
    if (address.statusCode !== 201) throw new Error(`seed withdrawal address: ${address.statusCode} ${address.body}`);
    seededIds.push({ prefix: '/api/v1/withdrawal-addresses/{id}', id: (address.json() as { id: string }).id });
    const revokeKey = await t.app.inject({
      method: 'DELETE',
      url: `/api/v1/account/api-keys/${revoked.apiKeyId}`,
      headers: bearer(revoked.sessionToken),
    });
    if (revokeKey.statusCode >= 300) throw new Error(`revoke key: ${revokeKey.statusCode} ${revokeKey.body}`);
    const signOut = await t.app.inject({ method: 'DELETE', url: '/api/v1/auth/sessions/current', headers: bearer(revoked.sessionToken) });
    if (signOut.statusCode >= 300) throw new Error(`sign out: ${signOut.statusCode} ${signOut.body}`);

    // Use every credential once, so bookkeeping such as an API key's last_used_at is settled before the snapshot
    // (the clock is frozen, so it is not touched again).
    for (const token of Object.values(creds)) await t.app.inject({ method: 'GET', url: '/api/v1/account', headers: bearer(token) });
    // The market-stats worker's first snapshot, as a running server has it: a read computes it when there is none yet.
    await ctx.services.market.refresh();

    const res = await t.app.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    doc = res.json();
  });

  afterAll(async () => {
    await t?.destroy();
  });

  async function send(c: Case): Promise<Answer> {
    const res = await t.app.inject({
      method: c.method as 'GET',
      url: c.url,
      headers: c.headers,
      ...(c.payload !== undefined ? { payload: c.payload } : {}),
      remoteAddress: randomAddress(),
    });
    return { status: res.statusCode, headers: res.headers as Record<string, unknown>, body: res.body };
  }

  /** What is wrong with an answer, or null. */
  function judge(c: Case, answer: Answer, op: Operation | null): string | null {
    const { status } = answer;
    // A documented, retryable 503 (a part the operator has not configured, as the contract allows) is an answer, not
    // a failure; any other 5xx is.
    const documentedUnavailable = status === 503 && op?.documented.has(503) === true && /"retryable":true/.test(answer.body);
    if (status >= 500 && !documentedUnavailable) return `server error ${status}`;
    const allowed = c.expect.some((e) => (e === 'ok' ? status >= 200 && status < 300 : e === status));
    if (!allowed && !documentedUnavailable) return `status ${status}, expected ${c.expect.join(' or ')}`;
    const cacheControl = String(answer.headers['cache-control'] ?? '');
    if (cacheControl !== 'private, no-store' && cacheControl !== 'no-store') return `cache-control "${cacheControl}"`;
    if (status < 400) return null;
    if (!String(answer.headers['content-type'] ?? '').startsWith('application/json'))
      return `error content-type ${String(answer.headers['content-type'])}`;
    let body: Json;
    try {
      body = JSON.parse(answer.body);
    } catch {
      return 'error body is not JSON';
    }
    if (!validEnvelope(body)) return `not the envelope: ${bodyAjv.errorsText(validEnvelope.errors)}`;
    if (Object.keys(body).join() !== 'error' || Object.keys(body.error).sort().join() !== 'code,message,request_id,retryable')
      return 'envelope fields';
    const requestId = body.error.request_id as string;
    if (!UUID.test(requestId) || requestId !== answer.headers['x-request-id']) return 'request_id is not the x-request-id header UUID';
    const spec = (ERROR_CATALOG as Record<string, { status: number; retryable: boolean }>)[body.error.code];
    if (!spec) return `code ${body.error.code} is not in the catalog`;
    // The contract gives UNAVAILABLE two statuses: 429 (rate limited) and 503 (a part not configured or unavailable).
    const statusFits = spec.status === status || (body.error.code === 'UNAVAILABLE' && documentedUnavailable);
    if (!statusFits || spec.retryable !== body.error.retryable)
      return `code ${body.error.code} answered with ${status}/${body.error.retryable}`;
    if (c.codes && !c.codes.includes(body.error.code)) return `code ${body.error.code}, expected ${c.codes.join(' or ')}`;
    if (LEAK.test(body.error.message)) return `message leaks internals: ${body.error.message}`;
    if (c.names && status === 422 && !String(body.error.message).includes(c.names))
      return `message does not name "${c.names}": ${body.error.message}`;
    if (op && !op.documented.has(status) && !WIRE_STATUSES.has(status))
      return `status ${status} is not in the operation's documented responses`;
    return null;
  }

  const pathWith = (op: Operation, values: Record<string, string>) =>
    op.path.replace(/\{([^}]+)\}/g, (_m, name: string) => encodeURIComponent(values[name] ?? ''));
  const withQuery = (path: string, query: Record<string, string>) => {
    const qs = new URLSearchParams(query).toString();
    return qs ? `${path}?${qs}` : path;
  };

  /** The cases for one operation, given what the route declares. */
  function casesFor(
    op: Operation,
    config: FastifyContextConfig,
    pathValues: Record<string, string>,
    seeded: boolean,
    methodsOfPath: Set<string>,
  ): Case[] {
    const auth: AuthRequirement | undefined = config.auth;
    const isPublic = auth === 'public';
    const requirement = auth === 'public' ? {} : (auth ?? {});
    const idempotent = config.idempotent === true || op.headers.some((h) => h.name.toLowerCase() === 'idempotency-key');
    const hasBody = op.method !== 'GET' && op.method !== 'HEAD';
    const good = requirement.admin ? creds.adminSession : creds.session;
    const baseQuery = sampleQuery(op.query) ?? {};
    const path = pathWith(op, pathValues);
    const url = withQuery(path, baseQuery);
    const key = (): Record<string, string> => (idempotent ? { 'idempotency-key': randomUUID() } : {});
    const authed = (token = good as string): Record<string, string> => ({ ...bearer(token), ...key() });
    // A body that can never reach a handler: JSON parsing fails after the credential check.
    const malformed = hasBody ? { payload: '{"a":', headers: JSON_TYPE } : { headers: {} };
    const cases: Case[] = [];

    // Credentials: missing, malformed and wrong ones.
    const unauthenticated: Array<[string, Record<string, string>]> = [
      ['no credential', {}],
      ['unknown API key', bearer(`ark_${randomBytes(24).toString('base64url')}`)],
      ['unknown session token', bearer(`ars_${randomBytes(24).toString('base64url')}`)],
      ['garbage bearer', bearer('not-a-token')],
      ['overlong bearer', bearer(`ark_${'x'.repeat(600)}`)],
      ['empty bearer', { authorization: 'Bearer ' }],
      ['basic scheme', { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }],
      ['revoked API key', bearer(creds.revokedKey as string)],
      ['signed-out session', bearer(creds.revokedSession as string)],
    ];
    for (const [name, headers] of unauthenticated) {
      cases.push({
        name,
        method: op.method,
        url,
        headers: { ...malformed.headers, ...headers },
        ...(malformed.payload ? { payload: malformed.payload } : {}),
        // A public read may answer; a public write still meets the malformed body.
        expect: isPublic ? (hasBody ? [422] : ['ok', 404, 422]) : [401],
        ...(isPublic ? {} : { codes: ['UNAUTHENTICATED'] }),
      });
    }

    // Authenticated, but lacking exactly what the route declares.
    const lacking: Array<[string, string | undefined]> = [];
    if (requirement.admin) lacking.push(['non-admin session', creds.session], ['admin API key', creds.adminKey]);
    if (requirement.session) lacking.push(['API key on a session-only route', creds.key]);
    if (requirement.scope === 'host') lacking.push(['API key without the host scope', creds.renterKey]);
    if (requirement.scope === 'renter') lacking.push(['API key without the renter scope', creds.hostKey]);
    if (requirement.stepUp && !requirement.admin) lacking.push(['session without a step-up', creds.noStepUp]);
    if (requirement.stepUp === 'totp' && !requirement.admin) lacking.push(['session with a password step-up', creds.passwordStepUp]);
    if (requirement.verified && !requirement.admin) lacking.push(['unverified account', creds.unverified]);
    for (const [name, token] of lacking) {
      // The renter-only key is another account's: on a machine's routes a stranger gets 404 first (http/owner-first.ts).
      const stranger = requirement.owner !== undefined && token === creds.renterKey;
      cases.push({
        name,
        method: op.method,
        url,
        headers: { ...malformed.headers, ...authed(token) },
        ...(malformed.payload ? { payload: malformed.payload } : {}),
        expect: stranger ? [404] : [403],
        codes: stranger ? ['NOT_FOUND'] : AUTHZ_CODES,
      });
    }

    // Path parameters that are not what the schema says.
    for (const p of op.pathParams) {
      for (const bad of ['not-a-uuid', '0', 'x'.repeat(300), '%00', '%zz', '%E0%A4%A']) {
        if (textAjv.validate(p.schema, decodeOrSelf(bad))) continue;
        const badPath = op.path.replace(/\{([^}]+)\}/g, (_m, name: string) =>
          name === p.name ? bad : encodeURIComponent(pathValues[name] ?? ''),
        );
        cases.push({
          name: `path ${p.name}=${bad.slice(0, 12)}`,
          method: op.method,
          url: withQuery(badPath, baseQuery),
          headers: { ...malformed.headers, ...authed() },
          ...(malformed.payload ? { payload: malformed.payload } : {}),
          // The body is parsed before parameters are validated, so the malformed body may be what is reported.
          expect: [422, 404],
        });
      }
    }

    // Query strings.
    if (op.query.length > 0) {
      for (const m of queryMutations(op.query, baseQuery)) {
        cases.push({
          name: m.name,
          method: op.method,
          url: withQuery(path, m.query),
          headers: authed(),
          expect: [422],
          codes: ['VALIDATION_FAILED'],
          names: m.names,
        });
      }
      if (op.method === 'GET') {
        cases.push({
          name: 'unknown query parameter',
          method: op.method,
          url: withQuery(path, { ...baseQuery, __unexpected: '1' }),
          headers: authed(),
          expect: ['ok', 404, 422],
        });
      }
      if (op.method === 'GET' && op.query.some((q) => q.name === 'cursor')) {
        const forgedBody = Buffer.from(JSON.stringify({ s: op.path, p: 1 })).toString('base64url');
        const forged: Array<[string, string]> = [
          ['forged cursor', 'abc.def'],
          ['cursor with a wrong signature', `${forgedBody}.${'A'.repeat(32)}`],
          ['cursor of another list', t.ctx.paginator.encode('bad-input-walker/another-list', { id: randomUUID() })],
          ['cursor with three parts', 'a.b.c'],
          ['cursor of random bytes', randomBytes(40).toString('base64url')],
        ];
        for (const [name, cursor] of forged) {
          cases.push({
            name,
            method: op.method,
            url: withQuery(path, { ...baseQuery, cursor }),
            headers: authed(),
            // A list under a resource that does not exist may say so before it reads the cursor.
            expect: op.pathParams.length > 0 && !seeded ? [422, 404] : [422],
            codes: ['INVALID_CURSOR', 'VALIDATION_FAILED', 'NOT_FOUND'],
          });
        }
      }
    }

    if (hasBody) {
      const raw = (name: string, payload: string, headers: Record<string, string>, expect: Case['expect'], codes?: string[]): Case => ({
        name,
        method: op.method,
        url,
        headers: { ...headers, ...authed() },
        payload,
        expect,
        ...(codes ? { codes } : {}),
      });
      // Bodies that fail while parsing, before any schema or handler.
      for (const [name, payload] of [
        ['malformed JSON', '{"a":'],
        ['single-quoted JSON', "{'a': 1}"],
        ['trailing garbage', '{"a": 1}}'],
        ['bare word', 'undefined'],
      ] as const) {
        cases.push(raw(name, payload, JSON_TYPE, [422], ['MALFORMED_JSON', 'VALIDATION_FAILED']));
      }
      cases.push(raw('prototype pollution', '{"__proto__": {"admin": true}}', JSON_TYPE, [422], ['MALFORMED_JSON', 'VALIDATION_FAILED']));
      cases.push(
        raw(
          'body over the size limit',
          JSON.stringify({ pad: 'x'.repeat(t.ctx.config.bodyLimitBytes + 1) }),
          JSON_TYPE,
          [413],
          ['BODY_TOO_LARGE'],
        ),
      );
      if (!requirement.admin && !requirement.session && !isPublic) {
        cases.push({
          ...raw('malformed JSON with an API key', '{"a":', JSON_TYPE, [422], ['MALFORMED_JSON']),
          headers: { ...JSON_TYPE, ...authed(creds.key) },
        });
      }

      if (op.body) {
        // Only routes with a JSON body schema: elsewhere a parsable body would reach the handler.
        cases.push(raw('empty JSON body', '', JSON_TYPE, [422], ['MALFORMED_JSON', 'VALIDATION_FAILED']));
        for (const payload of ['[]', '"text"', 'null', '42', 'true']) {
          if (!bodyAjv.validate(op.body, JSON.parse(payload)))
            cases.push(raw(`top-level ${payload}`, payload, JSON_TYPE, [422], ['VALIDATION_FAILED']));
        }
        for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/xml', 'multipart/form-data; boundary=x']) {
          cases.push(
            raw(
              `content-type ${type}`,
              'a=1',
              { 'content-type': type },
              [415, 422],
              ['UNSUPPORTED_MEDIA_TYPE', 'VALIDATION_FAILED', 'MALFORMED_JSON'],
            ),
          );
        }
        const base = trySample(op.body);
        const baseBody = base.ok ? base.value : {};
        for (const m of bodyMutations(op.body, baseBody)) {
          // Never send a body the route would accept: that would run the handler.
          if (bodyAjv.validate(op.body, m.body)) continue;
          cases.push({
            name: m.name,
            method: op.method,
            url,
            headers: { ...JSON_TYPE, ...authed() },
            payload: JSON.stringify(m.body),
            expect: [422],
            codes: ['VALIDATION_FAILED'],
            ...(base.ok && m.names ? { names: m.names } : {}),
          });
        }
        if (idempotent && base.ok) {
          // A body the route accepts, without a usable key: refused before the handler.
          const payload = JSON.stringify(baseBody);
          for (const [name, k] of [
            ['missing Idempotency-Key', undefined],
            ['malformed Idempotency-Key', 'not-a-uuid'],
            ['empty Idempotency-Key', ''],
          ] as const) {
            cases.push({
              name,
              method: op.method,
              url,
              headers: { ...JSON_TYPE, ...bearer(good as string), ...(k === undefined ? {} : { 'idempotency-key': k }) },
              payload,
              expect: [422],
              codes: ['IDEMPOTENCY_KEY_REQUIRED', 'VALIDATION_FAILED'],
              names: 'dempotency',
            });
          }
        }
      } else if (idempotent) {
        // No body schema: without a body the key is all that stands between the request and its effect.
        for (const [name, k] of [
          ['missing Idempotency-Key', undefined],
          ['malformed Idempotency-Key', 'not-a-uuid'],
        ] as const) {
          cases.push({
            name,
            method: op.method,
            url,
            headers: { ...bearer(good as string), ...(k === undefined ? {} : { 'idempotency-key': k }) },
            expect: [422],
            codes: ['IDEMPOTENCY_KEY_REQUIRED', 'VALIDATION_FAILED'],
            names: 'dempotency',
          });
        }
      }
    }

    // A method the path does not serve.
    for (const method of ['PATCH', 'PUT'].filter((m) => !methodsOfPath.has(m))) {
      cases.push({
        name: `method ${method}`,
        method,
        url,
        headers: { ...JSON_TYPE, ...authed() },
        payload: '{}',
        expect: [404, 405],
        codes: ['NOT_FOUND', 'METHOD_NOT_ALLOWED'],
      });
    }

    // Well-formed requests that cannot change anything: reads, and deletes of ids that do not exist.
    if (op.method === 'GET')
      cases.push({
        name: seeded ? 'read of a real resource' : 'read',
        method: 'GET',
        url,
        headers: authed(),
        expect: seeded ? ['ok'] : ['ok', 404],
      });
    if (op.method === 'DELETE' && !seeded && op.pathParams.length > 0)
      cases.push({ name: 'delete of a random id', method: 'DELETE', url, headers: authed(), expect: [404] });
    return cases;
  }

  // A walk over every operation: minutes on a loaded 2-core machine, so its own bound.
  it('answers every bad request with the envelope, never a 5xx, and changes nothing in the store', { timeout: 240_000 }, async () => {
    const operations = operationsOf(doc);
    expect(operations.length).toBeGreaterThan(20);
    const findings: Finding[] = [];
    const notes = new Set<string>();
    const initial = await snapshot(t.store);
    let sent = 0;

    for (const op of operations) {
      const route = `${op.method} ${op.path}`;
      const fastifyUrl = op.path.replace(/\{([^}]+)\}/g, ':$1');
      const randomValues = Object.fromEntries(
        op.pathParams.map((p) => [p.name, p.schema.enum?.[0] ?? (trySampleValue(p.schema) as string) ?? randomUUID()]),
      );
      const variants: Array<{ values: Record<string, string>; seeded: boolean }> = [{ values: randomValues, seeded: false }];
      const seededId = seededIds.find((s) => op.path.startsWith(s.prefix));
      if (seededId) variants.push({ values: { ...randomValues, id: seededId.id }, seeded: true });

      const before = await snapshot(t.store);
      // The first request tells what the route declares (auth, idempotency), through the onSend hook.
      const probe: Case = {
        name: 'probe',
        method: op.method,
        url: withQuery(pathWith(op, randomValues), sampleQuery(op.query) ?? {}),
        headers: {},
        expect: [],
      };
      if (op.method !== 'GET') Object.assign(probe, { payload: '{"a":', headers: JSON_TYPE });
      const probeAnswer = await send(probe);
      sent++;
      if (probeAnswer.status >= 500)
        findings.push({ route, case: 'probe', problem: `server error ${probeAnswer.status}`, request: probe, answer: probeAnswer });
      const config = configs.get(`${op.method} ${fastifyUrl}`);
      if (!config) {
        findings.push({
          route,
          case: 'probe',
          problem: 'the route did not answer (no route config seen)',
          request: probe,
          answer: probeAnswer,
        });
        continue;
      }
      if ((config.auth === 'public') !== op.documentedPublic) {
        notes.add(
          `${route}: config.auth is ${JSON.stringify(config.auth ?? 'authenticated')} but the OpenAPI operation ${op.documentedPublic ? 'has security: []' : 'requires the bearer scheme'}`,
        );
      }

      for (const variant of variants) {
        const methodsOfPath = new Set(operations.filter((o) => o.path === op.path).map((o) => o.method));
        for (const c of casesFor(op, config, variant.values, variant.seeded, methodsOfPath)) {
          const answer = await send(c);
          sent++;
          const problem = judge(c, answer, op);
          if (problem) {
            findings.push({
              route,
              case: c.name,
              problem,
              request: {
                method: c.method,
                url: c.url,
                headers: c.headers,
                ...(c.payload !== undefined
                  ? { payload: c.payload.length > 300 ? `${c.payload.slice(0, 300)}...(${c.payload.length} bytes)` : c.payload }
                  : {}),
              },
              answer: { status: answer.status, body: answer.body.slice(0, 500) },
            });
          }
        }
      }

      const changed = diff(before, await snapshot(t.store));
      if (changed.length > 0)
        findings.push({ route, case: 'store', problem: `the store changed: ${changed.join(', ')}`, request: probe, answer: probeAnswer });
    }

    const known = findings.filter((f) => knownIssue(f));
    const unknown = findings.filter((f) => !knownIssue(f));
    for (const issue of KNOWN_ISSUES) {
      const hits = known.filter((f) => knownIssue(f) === issue);
      const example = hits[0];
      notes.add(
        hits.length === 0
          ? `known issue no longer reproduces, remove it from KNOWN_ISSUES: ${issue.why}`
          : `known issue (${hits.length} answers): ${issue.why} Example: ${example?.request.method} ${example?.request.url.slice(0, 80)} -> ${example?.answer.status} ${example?.answer.body.slice(0, 120)}`,
      );
    }
    if (notes.size > 0) console.info(`bad-input walker notes on ${dialect}:\n${[...notes].join('\n')}`);
    console.info(`bad-input walker on ${dialect}: ${operations.length} operations, ${sent} requests, ${unknown.length} findings`);
    expect(unknown, JSON.stringify(unknown, null, 2)).toEqual([]);
    // Every table, audit_log and idempotency_keys included, is exactly as it was before the walk.
    expect(diff(initial, await snapshot(t.store))).toEqual([]);
  });

  it('walks the document it is given: the routes people add are covered without editing this file', () => {
    const operations = operationsOf(doc);
    const walked = new Set(operations.map((op) => `${op.method} ${op.path}`));
    // A few routes every version has: proof that the walk reads the live document.
    for (const route of ['GET /api/v1/account', 'POST /api/v1/account/api-keys', 'POST /api/v1/auth/sessions'])
      expect(walked).toContain(route);
  });
});
