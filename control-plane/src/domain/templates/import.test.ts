import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { templateFilterFrom } from './filters.js';
import { validateTemplateImport } from './import.js';
import { INT64_MAX, templateIdFromName } from './template.js';

const examplesPath = fileURLToPath(new URL('../../../../deploy/templates/examples.json', import.meta.url));
const DIGEST = `registry.test/ark/busybox@sha256:${'a'.repeat(64)}`;

function item(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    kind: 'classical',
    name: 'busybox',
    description: 'shell',
    vram_fit: { min_vram_bytes: '0' },
    runtimes: [{ backend: 'cuda', image_digest: DIGEST }],
    spec: { ports: [{ container_port: 8080, protocol: 'http' }], environment: {}, health_check: { port: 8080, path: '/' } },
    ...overrides,
  };
}

const ENGINE = { name: 'vllm', model: 'meta-llama/Llama-3.1-8B-Instruct', api_port: 8000 };

function modelItem(engine: unknown) {
  const spec: Record<string, unknown> = { ports: [{ container_port: 8000, protocol: 'http' }], environment: {} };
  if (engine !== null) spec.engine = engine;
  return item({ kind: 'model', name: 'llama', vram_fit: { min_vram_bytes: '25769803776' }, spec });
}

function errorsOf(document: unknown): string[] {
  const result = validateTemplateImport(document);
  if (result.ok) throw new Error('expected the document to be refused');
  return result.errors;
}

describe('validateTemplateImport', () => {
  it('accepts the shipped examples, one of each kind', () => {
    const result = validateTemplateImport(JSON.parse(readFileSync(examplesPath, 'utf8')));
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.templates.map((t) => t.kind).sort()).toEqual(['classical', 'custom', 'model']);
    const model = result.templates.find((t) => t.kind === 'model');
    expect(model?.spec.engine).toEqual({ name: 'vllm', model: 'meta-llama/Llama-3.1-8B-Instruct', api_port: 8000 });
    expect(model?.minVramBytes).toBe(25_769_803_776n);
    expect(result.templates.every((t) => t.idGiven)).toBe(true);
  });

  it('accepts {templates: [...]} too, derives ids from names and sorts runtimes by backend', () => {
    const result = validateTemplateImport({
      templates: [
        item({
          runtimes: [
            { backend: 'rocm', image_digest: DIGEST },
            { backend: 'cuda', image_digest: DIGEST },
          ],
        }),
      ],
    });
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    const [template] = result.templates;
    expect(template?.id).toBe(templateIdFromName('busybox'));
    expect(template?.idGiven).toBe(false);
    expect(template?.runtimes.map((r) => r.backend)).toEqual(['cuda', 'rocm']);
    expect(template?.recommendedVramBytes).toBeNull();
  });

  it('lower-cases given ids', () => {
    const result = validateTemplateImport([item({ template_id: 'C4545378-80FE-410C-A93D-CF63C8C2D43C' })]);
    expect(result.ok && result.templates[0]?.id).toBe('c4545378-80fe-410c-a93d-cf63c8c2d43c');
  });

  it('refuses documents that are not a list of templates', () => {
    expect(errorsOf({ foo: 1 })[0]).toMatch(/must be an array of templates/);
    expect(errorsOf('text')[0]).toMatch(/must be an array of templates/);
    expect(errorsOf([])[0]).toMatch(/no templates/);
    expect(errorsOf(Array.from({ length: 1001 }, () => item()))[0]).toMatch(/at most 1000/);
  });

  it('names the item index and the field of every schema problem', () => {
    const errors = errorsOf([
      item(),
      item({ name: 'two', kind: 'fancy' }),
      item({ name: 'three', spec: { ports: [{ container_port: 70000, protocol: 'http' }], environment: {} } }),
      item({ name: 'four', extra: true }),
      (() => {
        const { description: _d, ...rest } = item({ name: 'five' });
        return rest;
      })(),
      item({ name: 'six', runtimes: [{ backend: 'cuda', image_digest: 'busybox:latest' }] }),
      item({ name: 'seven', vram_fit: { min_vram_bytes: 1024 } }),
      item({ name: 'eight', spec: { ports: [], environment: { 'BAD-KEY': 'x' } } }),
      item({ name: 'nine', template_id: 'not-a-uuid' }),
      item({ name: 'ten', runtimes: [] }),
    ]);
    expect(errors).toEqual([
      'templates[1].kind must be one of "model", "classical", "custom"',
      'templates[2].spec.ports[0].container_port must be <= 65535',
      'templates[3] must not have the property "extra"',
      'templates[4].description is required',
      expect.stringMatching(/^templates\[5\]\.runtimes\[0\]\.image_digest must match pattern/),
      'templates[6].vram_fit.min_vram_bytes must be string',
      'templates[7].spec.environment must not have the property "BAD-KEY"',
      expect.stringMatching(/^templates\[8\]\.template_id must match/),
      'templates[9].runtimes must NOT have fewer than 1 items',
    ]);
  });

  it('checks the rules between fields', () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [modelItem(null), 'templates[0].spec.engine is required for kind "model"'],
      [modelItem({ name: 'vllm', model: 'm', api_port: 9000 }), 'templates[0].spec.engine.api_port 9000 is not declared in spec.ports'],
      [
        item({
          kind: 'custom',
          spec: {
            ports: [{ container_port: 8000, protocol: 'http' }],
            environment: {},
            engine: { name: 'vllm', model: 'm', api_port: 8000 },
          },
        }),
        'templates[0].spec.engine is only allowed for kind "model", not "custom"',
      ],
      [
        item({
          kind: 'model',
          spec: {
            ports: [{ container_port: 8000, protocol: 'tcp' }],
            environment: {},
            engine: { name: 'vllm', model: 'm', api_port: 8000 },
          },
        }),
        'templates[0].spec.engine.api_port must be an http or https port',
      ],
      [
        item({
          runtimes: [
            { backend: 'cuda', image_digest: DIGEST },
            { backend: 'cuda', image_digest: DIGEST },
          ],
        }),
        'templates[0].runtimes[1].backend repeats "cuda" of runtimes[0]',
      ],
      [
        item({
          spec: {
            ports: [
              { container_port: 22, protocol: 'tcp' },
              { container_port: 22, protocol: 'tcp' },
            ],
            environment: {},
          },
        }),
        'templates[0].spec.ports[1].container_port repeats 22 of spec.ports[0]',
      ],
      [
        item({
          spec: {
            ports: [
              { container_port: 1, protocol: 'tcp', name: 'a' },
              { container_port: 2, protocol: 'tcp', name: 'a' },
            ],
            environment: {},
          },
        }),
        'templates[0].spec.ports[1].name repeats "a" of spec.ports[0]',
      ],
      [
        item({ spec: { ports: [], environment: {}, health_check: { port: 8080 } } }),
        'templates[0].spec.health_check.port 8080 is not declared in spec.ports',
      ],
      [
        item({ spec: { ports: [{ container_port: 22, protocol: 'tcp' }], environment: {}, health_check: { port: 22, path: '/' } } }),
        'templates[0].spec.health_check.path needs an http or https port, not tcp',
      ],
      [
        item({ vram_fit: { min_vram_bytes: '100', recommended_vram_bytes: '99' } }),
        'templates[0].vram_fit.recommended_vram_bytes must not be below min_vram_bytes',
      ],
      [
        item({ vram_fit: { min_vram_bytes: (INT64_MAX + 1n).toString() } }),
        `templates[0].vram_fit.min_vram_bytes must be a base-10 integer string from 0 to ${INT64_MAX}`,
      ],
    ];
    for (const [document, message] of cases) expect(errorsOf([document])).toEqual([message]);
    expect(validateTemplateImport([modelItem(ENGINE)]).ok).toBe(true);
    expect(
      validateTemplateImport([
        item({ spec: { ports: [{ container_port: 22, protocol: 'tcp' }], environment: {}, health_check: { port: 22 } } }),
      ]).ok,
    ).toBe(true);
  });

  it('refuses repeated ids and names across items', () => {
    const id = 'c4545378-80fe-410c-a93d-cf63c8c2d43c';
    expect(errorsOf([item({ template_id: id }), item({ template_id: id.toUpperCase(), name: 'other' })])).toEqual([
      'templates[1].template_id repeats the id of templates[0]',
    ]);
    expect(errorsOf([item(), item({ template_id: id })])).toEqual(['templates[1].name repeats the name of templates[0]']);
    // Two unnamed-id items with the same name derive the same id.
    expect(errorsOf([item(), item()])).toEqual([
      'templates[1].template_id repeats the id of templates[0]',
      'templates[1].name repeats the name of templates[0]',
    ]);
  });

  it('reports a bounded number of problems', () => {
    const errors = errorsOf(Array.from({ length: 200 }, (_, i) => item({ name: `t${i}`, kind: 'nope' })));
    expect(errors).toHaveLength(51);
    expect(errors[50]).toBe('... and 150 more');
  });
});

describe('templateIdFromName', () => {
  it('is a stable UUID v5 per name', () => {
    const id = templateIdFromName('busybox-web');
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(templateIdFromName('busybox-web')).toBe(id);
    expect(templateIdFromName('busybox-web2')).not.toBe(id);
  });
});

describe('templateFilterFrom', () => {
  it('parses the query and clamps a VRAM bound above the store range', () => {
    expect(templateFilterFrom({})).toEqual({});
    expect(templateFilterFrom({ kind: 'model', backend: 'rocm', min_vram_bytes: '1024' })).toEqual({
      kind: 'model',
      backend: 'rocm',
      maxMinVramBytes: 1024n,
    });
    expect(templateFilterFrom({ min_vram_bytes: '9'.repeat(30) }).maxMinVramBytes).toBe(INT64_MAX);
  });
});
