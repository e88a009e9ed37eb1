import type { TemplateBackend, TemplateKind, TemplateListQuery } from '@ark/shared';
import { INT64_MAX } from './template.js';

/** The catalog filters of GET /api/v1/templates, parsed. */
export interface TemplateFilter {
  kind?: TemplateKind;
  /** Templates whose min_vram_bytes is at most this. */
  maxMinVramBytes?: bigint;
  /** Only templates with a built runtime for this backend. */
  backend?: TemplateBackend;
}

export function templateFilterFrom(query: Pick<TemplateListQuery, 'kind' | 'min_vram_bytes' | 'backend'>): TemplateFilter {
  const filter: TemplateFilter = {};
  if (query.kind !== undefined) filter.kind = query.kind;
  if (query.backend !== undefined) filter.backend = query.backend;
  if (query.min_vram_bytes !== undefined) {
    // No stored template needs more than INT64_MAX, so a larger bound selects the same rows and stays in range.
    const bound = BigInt(query.min_vram_bytes);
    filter.maxMinVramBytes = bound > INT64_MAX ? INT64_MAX : bound;
  }
  return filter;
}
