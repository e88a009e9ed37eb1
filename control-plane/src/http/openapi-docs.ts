import { ERROR_CATALOG, type ErrorCode } from '@ark/shared';
import { OPERATION_ERROR_CODES } from './operation-errors.js';

// Completes the generated OpenAPI document for readers (the interactive reference at /docs, client generators):
// every operation gets a description (its own, else its summary) followed by who may call it and a table of the
// error codes it can answer per status; every error response names its codes (`x-ark-error-codes`) with one example
// envelope each; every JSON request body gets an example built from its own schema. Nothing here is written per
// route except the services' own refusals (operation-errors.ts): the rest follows from what the routes declare.

type Json = Record<string, any>;

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;
const CODES = Object.keys(ERROR_CATALOG) as ErrorCode[];
const CODE_MENTION = /\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b/g;

/** The statuses a code answers with (UNAVAILABLE: 429 rate limits, 503 unavailable state). */
export function statusesOf(code: ErrorCode): number[] {
  const spec = ERROR_CATALOG[code] as { status: number; alsoStatus?: readonly number[] };
  return [spec.status, ...(spec.alsoStatus ?? [])];
}

const hasParameter = (op: Json, where: string, name: string) =>
  Array.isArray(op.parameters) && op.parameters.some((p: Json) => p.in === where && p.name === name);

/** What the plumbing answers, from what the operation declares. */
function plumbingCodes(op: Json, path: string): ErrorCode[] {
  const codes: ErrorCode[] = ['VALIDATION_FAILED', 'UNAVAILABLE'];
  const auth = op['x-ark-auth'] as Json | undefined;
  if (auth) {
    codes.push('UNAUTHENTICATED');
    if (auth.scope || auth.scopeInBody) codes.push('SCOPE_REQUIRED');
    if (auth.admin) codes.push('ADMIN_SESSION_REQUIRED');
    if (auth.session) codes.push('FORBIDDEN');
    if (auth.verified) codes.push('EMAIL_NOT_VERIFIED');
    if (auth.stepUp) codes.push('STEP_UP_REQUIRED');
    if (auth.stepUp === 'totp') codes.push('STEP_UP_TOTP_REQUIRED');
  }
  if (path.includes('{')) codes.push('NOT_FOUND');
  if (hasParameter(op, 'header', 'idempotency-key'))
    codes.push('IDEMPOTENCY_KEY_REQUIRED', 'IDEMPOTENCY_CONFLICT', 'IDEMPOTENCY_IN_PROGRESS');
  if (hasParameter(op, 'query', 'cursor')) codes.push('INVALID_CURSOR');
  if (op.requestBody) codes.push('MALFORMED_JSON', 'BODY_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE');
  return codes;
}

/** The error codes of one operation by documented status, in catalog order. */
export function operationErrorCodes(method: string, path: string, op: Json): Map<number, ErrorCode[]> {
  const named = new Set<ErrorCode>([...plumbingCodes(op, path), ...(OPERATION_ERROR_CODES[`${method.toUpperCase()} ${path}`] ?? [])]);
  for (const [mention] of `${op.summary ?? ''} ${op.description ?? ''}`.matchAll(CODE_MENTION)) {
    if (mention in ERROR_CATALOG) named.add(mention as ErrorCode);
  }
  const byStatus = new Map<number, ErrorCode[]>();
  for (const status of Object.keys(op.responses ?? {}).map(Number)) {
    if (status < 400) continue;
    byStatus.set(
      status,
      CODES.filter((code) => named.has(code) && statusesOf(code).includes(status)),
    );
  }
  return byStatus;
}

function requirementText(op: Json): string {
  const auth = op['x-ark-auth'] as Json | undefined;
  if (!auth) return 'No credential needed.';
  const parts = [auth.admin ? 'an interactive admin session' : auth.session ? 'an interactive session' : 'a bearer API key or session'];
  if (auth.scope) parts.push(auth.orSession ? `with the ${auth.scope} scope (any session passes)` : `with the ${auth.scope} scope`);
  if (auth.scopeInBody) parts.push('with the scope the body calls for (see the description)');
  if (auth.verified) parts.push('of a verified (or wallet-created) account');
  if (auth.stepUp) parts.push(auth.stepUp === 'totp' ? 'with a fresh TOTP step-up' : 'with a fresh step-up');
  const text = `Needs ${parts.join(' ')}.`;
  // owner-first.ts: a stranger's missing scope answers as the missing resource does.
  return auth.owner ? `${text} Anyone who neither owns the ${auth.owner} nor is an admin gets 404, whatever the key's scopes.` : text;
}

function envelopeExample(code: ErrorCode): Json {
  const spec = ERROR_CATALOG[code];
  return {
    summary: code,
    value: { error: { code, message: spec.message, retryable: spec.retryable, request_id: '6f1c7a52-3b0e-4d8a-9c51-2f0d3e9b7a14' } },
  };
}

// ---- Request body examples, built from the body's schema ----

const HEX = '0123456789abcdef';
const hex = (n: number) => Array.from({ length: n }, (_, i) => HEX[(i * 7 + 3) % 16]).join('');
const EXAMPLE_DIGEST = `sha256:${hex(64)}`;

/** Values tried, in order, for a string under a pattern: the first the pattern and lengths admit is used. */
const PATTERN_CANDIDATES = [
  '1000000',
  '0x52908400098527886E0F7030069857D2E4169EE7',
  `0x${hex(130)}`,
  // A 32-byte key in base64 (an Ed25519 public key).
  Buffer.from(hex(64), 'hex').toString('base64'),
  EXAMPLE_DIGEST,
  `registry.example.com/team/trainer@${EXAMPLE_DIGEST}`,
  '0.99',
  '6h',
  '30d',
  'model-hub',
  'MY_SETTING',
  'ABCD-EFGH',
  '123456',
  'example',
];

/** Values by property name, used when the schema admits them. */
const BY_NAME: Record<string, unknown> = {
  email: 'renter@example.com',
  password: 'correct horse battery staple',
  label: 'ci runner',
  reason: 'Finished with the machine',
  text: 'The job stopped answering on port 8080.',
  subject: 'Job unreachable',
  name: 'Ada',
  user_code: 'WDJB-MJHT',
  token: 'hf_exampletoken',
  code: '123456',
  gpu_count: 1,
  duration_limit_s: 3600,
  new_duration_limit_s: 7200,
  url: 'https://hooks.example.com/ark',
  ssh_public_keys: ['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGq5kVb0sZbWc0k7sK3R8f1mP6kLQ2bY9xT4vN8uJ0cE me@laptop'],
};

/** Whole bodies where the schema alone cannot say what makes sense together. */
const BODY_EXAMPLES: Record<string, Json> = {
  'POST /api/v1/quotes': {
    offer_id: '0b9f8e6a-5d4c-4b3a-9f2e-1d0c9b8a7f6e',
    gpu_count: 1,
    duration_limit_s: 3600,
    image_digest: `registry.example.com/team/trainer@${EXAMPLE_DIGEST}`,
  },
};

function resolve(schema: Json, doc: Json): Json {
  let current = schema;
  for (let hops = 0; typeof current?.$ref === 'string' && hops < 8; hops++) {
    const ref = current.$ref as string;
    const name = ref.startsWith('#/components/schemas/') ? ref.slice('#/components/schemas/'.length) : ref;
    current = doc.components?.schemas?.[name] ?? {};
  }
  return current ?? {};
}

function admits(schema: Json, value: unknown): boolean {
  if (schema.enum && !schema.enum.includes(value)) return false;
  if (typeof value === 'string') {
    if (schema.type && schema.type !== 'string') return false;
    if (schema.pattern && !new RegExp(schema.pattern, 'u').test(value)) return false;
    if (schema.minLength !== undefined && value.length < schema.minLength) return false;
    if (schema.maxLength !== undefined && value.length > schema.maxLength) return false;
    if (schema.format === 'uuid' && !/^[0-9a-f-]{36}$/i.test(value)) return false;
    if (schema.format === 'email' && !value.includes('@')) return false;
    return true;
  }
  if (typeof value === 'number') {
    if (schema.type !== 'integer' && schema.type !== 'number') return false;
    return (schema.minimum === undefined || value >= schema.minimum) && (schema.maximum === undefined || value <= schema.maximum);
  }
  if (Array.isArray(value)) return schema.type === 'array';
  return false;
}

function sampleString(schema: Json): string {
  if (schema.format === 'uuid') return '3fa85f64-5717-4562-b3fc-2c963f66afa6';
  if (schema.format === 'date-time') return '2026-01-01T12:00:00Z';
  if (schema.format === 'email') return 'renter@example.com';
  if (schema.format === 'uri') return 'https://hooks.example.com/ark';
  const candidates = schema.pattern ? PATTERN_CANDIDATES : ['example'];
  const found = candidates.find((candidate) => admits(schema, candidate));
  if (found !== undefined) return found;
  return 'x'.repeat(Math.max(1, schema.minLength ?? 1));
}

/** A value the schema admits: required properties only (optional ones can exclude each other), first choices. */
export function sampleFromSchema(input: Json, doc: Json, name?: string, depth = 0): unknown {
  const schema = resolve(input, doc);
  if (depth > 8) return null;
  if (schema.examples?.[0] !== undefined) return schema.examples[0];
  if (schema.default !== undefined) return schema.default;
  if (schema.const !== undefined) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  if (name !== undefined && name in BY_NAME && admits(schema, BY_NAME[name])) return BY_NAME[name];
  const choice = (schema.anyOf ?? schema.oneOf) as Json[] | undefined;
  if (choice?.length) return sampleFromSchema(choice.find((c) => c.type !== 'null') ?? choice[0] ?? {}, doc, name, depth + 1);
  if (Array.isArray(schema.allOf)) {
    return Object.assign({}, ...schema.allOf.map((part: Json) => sampleFromSchema(part, doc, name, depth + 1)));
  }
  switch (schema.type) {
    case 'object': {
      const out: Json = {};
      for (const key of (schema.required as string[] | undefined) ?? []) {
        out[key] = sampleFromSchema(schema.properties?.[key] ?? {}, doc, key, depth + 1);
      }
      // A body that needs one of several optional properties (a step-up: password, code or signature) gets the first.
      for (const key of Object.keys(schema.properties ?? {})) {
        if (Object.keys(out).length >= (schema.minProperties ?? 0)) break;
        if (!(key in out)) out[key] = sampleFromSchema(schema.properties[key], doc, key, depth + 1);
      }
      return out;
    }
    case 'array': {
      const item = sampleFromSchema(schema.items ?? {}, doc, undefined, depth + 1);
      return Array.from({ length: Math.max(1, schema.minItems ?? 1) }, () => item);
    }
    case 'string':
      return sampleString(schema);
    case 'integer':
    case 'number':
      return schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : 1);
    case 'boolean':
      return true;
    case 'null':
      return null;
    default:
      return {};
  }
}

/** The transformObject of @fastify/swagger: completes every operation of the generated document. */
const pascal = (word: string) =>
  word
    .split(/[^A-Za-z0-9]+/)
    .filter((part) => part !== '')
    .map((part) => `${part[0]?.toUpperCase() ?? ''}${part.slice(1)}`)
    .join('');

/**
 * A stable operationId from the method and the path, unique by construction (the method, every literal segment and
 * every parameter's name, in order): `GET /api/v1/jobs/{id}/events` is `getJobsByIdEvents`. Client generators name
 * their methods after it, so it never changes for an existing route; a route may declare its own instead.
 */
export function operationIdOf(method: string, path: string): string {
  const words = path
    .replace(/^\/api\/v1(?=\/|$)/, '')
    .split('/')
    .filter((segment) => segment !== '')
    .map((segment) => (/^\{.+\}$/.test(segment) ? `By${pascal(segment.slice(1, -1))}` : pascal(segment)));
  return `${method.toLowerCase()}${words.join('') || 'Root'}`;
}

/** The tag of an operation that declares none: its area, the first segment under /api/v1; `system` outside it. */
export function defaultTagOf(path: string): string {
  const area = /^\/api\/v1\/([^/{]+)/.exec(path)?.[1];
  return area ?? 'system';
}

export function completeOpenApiDocument(doc: Json): Json {
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method] as Json | undefined;
      if (!op) continue;
      const key = `${method.toUpperCase()} ${path}`;
      op.operationId ??= operationIdOf(method, path);
      if (!Array.isArray(op.tags) || op.tags.length === 0) op.tags = [defaultTagOf(path)];
      const codes = operationErrorCodes(method, path, op);
      const rows: string[] = [];
      for (const [status, list] of [...codes].sort(([a], [b]) => a - b)) {
        // A copy: the generator may share one response object between operations.
        const shared = op.responses[String(status)] as Json;
        const response: Json = { ...shared, 'x-ark-error-codes': list };
        response.description = list.length > 0 ? list.join(', ') : 'Not answered by this operation (documented on every route).';
        const media = shared.content?.['application/json'] as Json | undefined;
        if (media && list.length > 0) {
          response.content = {
            ...shared.content,
            'application/json': { ...media, examples: Object.fromEntries(list.map((code) => [code, envelopeExample(code)])) },
          };
        }
        op.responses[String(status)] = response;
        if (list.length > 0) rows.push(`| ${status} | ${list.map((c) => `\`${c}\``).join(', ')} |`);
      }
      const own = (op.description ?? op.summary ?? key) as string;
      op.description = [
        own,
        requirementText(op),
        rows.length > 0
          ? ['Error codes (the `code` of the error envelope):', '', '| Status | Codes |', '|---|---|', ...rows].join('\n')
          : '',
      ]
        .filter((part) => part !== '')
        .join('\n\n');
      const body = op.requestBody?.content?.['application/json'] as Json | undefined;
      if (body?.schema && !body.examples) {
        const example = { summary: 'A valid body', value: BODY_EXAMPLES[key] ?? sampleFromSchema(body.schema, doc) };
        op.requestBody = {
          ...op.requestBody,
          content: { ...op.requestBody.content, 'application/json': { ...body, examples: { example } } },
        };
      }
    }
  }
  return doc;
}
