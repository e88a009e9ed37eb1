import { decimalBoundOf, TEMPLATE_LIMITS, TemplateImportItem } from '@ark/shared';
import Ajv, { type ErrorObject, type SchemaObject } from 'ajv';
import addFormats from 'ajv-formats';
import { INT64_MAX, type TemplateDefinition, templateIdFromName } from './template.js';

/** An item of a valid import file: idGiven is false when the id was derived from the name. */
export interface ImportedTemplate extends TemplateDefinition {
  idGiven: boolean;
}

export type ImportValidation = { ok: true; templates: ImportedTemplate[] } | { ok: false; errors: string[] };

/** At most this many problems are reported; a wholly wrong file should not flood the terminal. */
const MAX_REPORTED_ERRORS = 50;

const ajv = new Ajv.default({
  allErrors: true,
  strict: false,
  verbose: true,
  coerceTypes: false,
  useDefaults: false,
  removeAdditional: false,
});
addFormats.default(ajv);
const checkItem = ajv.compile<TemplateImportItem>(TemplateImportItem as SchemaObject);

/**
 * Validates a whole import document before anything is written: an array of templates (or `{templates: [...]}`).
 * Every message names the item index and the field, e.g. `templates[2].spec.ports[0].container_port must be <= 65535`.
 */
export function validateTemplateImport(document: unknown): ImportValidation {
  const items = Array.isArray(document)
    ? document
    : document !== null && typeof document === 'object' && Array.isArray((document as { templates?: unknown }).templates)
      ? ((document as { templates: unknown[] }).templates as unknown[])
      : null;
  if (items === null) return { ok: false, errors: ['the document must be an array of templates (or an object {"templates": [...]})'] };
  if (items.length === 0) return { ok: false, errors: ['the document holds no templates'] };
  if (items.length > TEMPLATE_LIMITS.importItemsMax) {
    return { ok: false, errors: [`the document holds ${items.length} templates; at most ${TEMPLATE_LIMITS.importItemsMax} per file`] };
  }

  const errors: string[] = [];
  const templates: ImportedTemplate[] = [];
  const seenIds = new Map<string, number>();
  const seenNames = new Map<string, number>();
  items.forEach((item, index) => {
    const at = `templates[${index}]`;
    if (!checkItem(item)) {
      for (const message of describeSchemaErrors(checkItem.errors ?? [])) errors.push(`${at}${message}`);
      return;
    }
    const problems = semanticProblems(item);
    for (const problem of problems) errors.push(`${at}.${problem}`);
    if (problems.length > 0) return;

    const id = (item.template_id ?? templateIdFromName(item.name)).toLowerCase();
    const idTwin = seenIds.get(id);
    if (idTwin !== undefined) errors.push(`${at}.template_id repeats the id of templates[${idTwin}]`);
    const nameTwin = seenNames.get(item.name);
    if (nameTwin !== undefined) errors.push(`${at}.name repeats the name of templates[${nameTwin}]`);
    seenIds.set(id, index);
    seenNames.set(item.name, index);
    templates.push({ ...toDefinition(id, item), idGiven: item.template_id !== undefined });
  });
  if (errors.length > 0) {
    const shown = errors.slice(0, MAX_REPORTED_ERRORS);
    if (errors.length > shown.length) shown.push(`... and ${errors.length - shown.length} more`);
    return { ok: false, errors: shown };
  }
  return { ok: true, templates };
}

function toDefinition(id: string, item: TemplateImportItem): TemplateDefinition {
  return {
    id,
    kind: item.kind,
    name: item.name,
    description: item.description,
    minVramBytes: BigInt(item.vram_fit.min_vram_bytes),
    recommendedVramBytes: item.vram_fit.recommended_vram_bytes === undefined ? null : BigInt(item.vram_fit.recommended_vram_bytes),
    runtimes: [...item.runtimes].sort((a, b) => a.backend.localeCompare(b.backend)),
    spec: item.spec,
  };
}

/** Rules a schema cannot say: references between fields, uniqueness, and what each kind needs. */
function semanticProblems(item: TemplateImportItem): string[] {
  const problems: string[] = [];
  const min = BigInt(item.vram_fit.min_vram_bytes);
  if (min > INT64_MAX) problems.push(`vram_fit.min_vram_bytes must be at most ${INT64_MAX}`);
  if (item.vram_fit.recommended_vram_bytes !== undefined) {
    const recommended = BigInt(item.vram_fit.recommended_vram_bytes);
    if (recommended > INT64_MAX) problems.push(`vram_fit.recommended_vram_bytes must be at most ${INT64_MAX}`);
    if (recommended < min) problems.push('vram_fit.recommended_vram_bytes must not be below min_vram_bytes');
  }

  const backends = new Map<string, number>();
  item.runtimes.forEach((runtime, i) => {
    const twin = backends.get(runtime.backend);
    if (twin !== undefined) problems.push(`runtimes[${i}].backend repeats "${runtime.backend}" of runtimes[${twin}]`);
    backends.set(runtime.backend, i);
  });

  const ports = new Map<number, { index: number; protocol: string }>();
  const portNames = new Map<string, number>();
  item.spec.ports.forEach((port, i) => {
    const twin = ports.get(port.container_port);
    if (twin !== undefined) problems.push(`spec.ports[${i}].container_port repeats ${port.container_port} of spec.ports[${twin.index}]`);
    else ports.set(port.container_port, { index: i, protocol: port.protocol });
    if (port.name !== undefined) {
      const nameTwin = portNames.get(port.name);
      if (nameTwin !== undefined) problems.push(`spec.ports[${i}].name repeats "${port.name}" of spec.ports[${nameTwin}]`);
      portNames.set(port.name, i);
    }
  });

  const health = item.spec.health_check;
  if (health !== undefined) {
    const port = ports.get(health.port);
    if (port === undefined) problems.push(`spec.health_check.port ${health.port} is not declared in spec.ports`);
    else if (health.path !== undefined && port.protocol === 'tcp')
      problems.push('spec.health_check.path needs an http or https port, not tcp');
  }

  const engine = item.spec.engine;
  if (item.kind === 'model') {
    if (engine === undefined) problems.push('spec.engine is required for kind "model"');
    else {
      const port = ports.get(engine.api_port);
      if (port === undefined) problems.push(`spec.engine.api_port ${engine.api_port} is not declared in spec.ports`);
      else if (port.protocol === 'tcp') problems.push('spec.engine.api_port must be an http or https port');
    }
  } else if (engine !== undefined) {
    problems.push(`spec.engine is only allowed for kind "model", not "${item.kind}"`);
  }
  return problems;
}

const boundOf = (issue: ErrorObject): bigint | undefined => decimalBoundOf(issue.parentSchema as { pattern?: unknown } | undefined);

/** Ajv issues as `<.field.path> <message>`, one per field, with unions folded into "must be one of". */
function describeSchemaErrors(issues: ErrorObject[]): string[] {
  const unionPaths = new Set(issues.filter((e) => e.keyword === 'anyOf').map((e) => e.instancePath));
  const byField = new Map<string, string>();
  const report = (field: string, message: string) => {
    if (!byField.has(field)) byField.set(field, message);
  };
  for (const issue of issues) {
    const path = fieldPath(issue.instancePath);
    if (issue.keyword === 'anyOf') {
      const allowed = Array.isArray(issue.schema)
        ? (issue.schema as Array<{ const?: unknown }>).map((s) => s.const).filter((v) => v !== undefined)
        : [];
      byField.set(
        path,
        allowed.length > 0 ? `${path} must be one of ${allowed.map((v) => JSON.stringify(v)).join(', ')}` : `${path} is invalid`,
      );
      continue;
    }
    // The branches of a folded union add nothing to "must be one of".
    if (unionPaths.has(issue.instancePath) && (issue.keyword === 'const' || issue.keyword === 'type')) continue;
    if (issue.keyword === 'additionalProperties') {
      const property = String(issue.params.additionalProperty);
      report(`${path}.${property}`, `${path} must not have the property "${property}"`);
    } else if (issue.keyword === 'required') {
      const property = String(issue.params.missingProperty);
      report(`${path}.${property}`, `${path}.${property} is required`);
    } else if ((issue.keyword === 'pattern' || issue.keyword === 'maxLength') && boundOf(issue) !== undefined) {
      // A bounded decimal (ByteCount, MicroAmount): say the range, as the HTTP validator does, not the long pattern.
      report(path, `${path} must be a base-10 integer string from 0 to ${boundOf(issue)}`);
    } else {
      report(path, `${path} ${issue.message ?? 'is invalid'}`);
    }
  }
  return [...byField.values()];
}

/** `/spec/ports/0/container_port` -> `.spec.ports[0].container_port` */
function fieldPath(instancePath: string): string {
  if (instancePath === '') return '';
  return instancePath
    .split('/')
    .slice(1)
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'))
    .map((part) => (/^\d+$/.test(part) ? `[${part}]` : `.${part}`))
    .join('');
}
