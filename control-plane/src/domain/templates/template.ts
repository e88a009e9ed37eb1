import { createHash } from 'node:crypto';
import type { TemplateKind, TemplateRuntime, TemplateSpec } from '@ark/shared';
import { canonicalJson } from '@ark/shared/canonical-json';

/** A catalog template as the domain sees it: VRAM in bigint bytes, runtimes ordered by backend. */
export interface TemplateDefinition {
  id: string;
  kind: TemplateKind;
  name: string;
  description: string;
  minVramBytes: bigint;
  recommendedVramBytes: bigint | null;
  runtimes: TemplateRuntime[];
  spec: TemplateSpec;
}

/** A stored template. */
export interface TemplateRecord extends TemplateDefinition {
  createdAt: string;
  updatedAt: string;
}

/** What the catalog says on every inference (model-kind) template, and Job.tier's meaning (contract part 2). */
export const INFERENCE_DATA_NOTICE =
  'Community inference: prompts and answers are processed on a host machine run by a third party. Do not send sensitive data.';

/** The largest value the store's bigint columns hold; VRAM above it is refused at import and clamped in filters. */
export const INT64_MAX = 9_223_372_036_854_775_807n;

// A fixed namespace so that a name always derives the same id, on every control plane.
const TEMPLATE_ID_NAMESPACE = 'a7f1c3de-6b2e-4f0a-9c85-3d1e2b7f9a40';

/**
 * A UUID v5 (RFC 9562, SHA-1 name-based) from the template's name: an import file without ids still updates
 * the same templates every time it is imported.
 */
export function templateIdFromName(name: string): string {
  const namespace = Buffer.from(TEMPLATE_ID_NAMESPACE.replaceAll('-', ''), 'hex');
  const hash = createHash('sha1').update(namespace).update(name, 'utf8').digest();
  const bytes = hash.subarray(0, 16);
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x50;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Two definitions describe the same template (used to report an import item as unchanged). */
export function sameDefinition(a: TemplateDefinition, b: TemplateDefinition): boolean {
  return canonical(a) === canonical(b);
}

function canonical(definition: TemplateDefinition): string {
  return canonicalJson({
    ...definition,
    minVramBytes: definition.minVramBytes.toString(),
    recommendedVramBytes: definition.recommendedVramBytes?.toString() ?? null,
  });
}
