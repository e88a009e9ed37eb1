import type { Template, TemplateQualification } from '@ark/shared';
import { INFERENCE_DATA_NOTICE, type TemplateRecord } from '../domain/templates/template.js';
import type { ImportSummary } from '../services/templates/index.js';
import type { Qualified } from '../services/templates/qualify.js';

// The template catalog as the wire shows it (shared/src/http/templates.ts): the routes and `ark-cp templates` alike.

/** Contract part 2, Template: a catalog entry, and whether it is published. */
export function templateView(record: TemplateRecord, published: boolean): Template {
  return {
    template_id: record.id,
    kind: record.kind,
    name: record.name,
    description: record.description,
    vram_fit: {
      min_vram_bytes: record.minVramBytes.toString(),
      ...(record.recommendedVramBytes === null ? {} : { recommended_vram_bytes: record.recommendedVramBytes.toString() }),
    },
    runtimes: record.runtimes.map((r) => ({ backend: r.backend, image_digest: r.image_digest })),
    spec: record.spec,
    ...(record.kind === 'model' ? { tier: 'inference' as const, data_notice: INFERENCE_DATA_NOTICE } : { tier: 'container' as const }),
    published,
    created_at: record.createdAt,
    updated_at: record.updatedAt,
  };
}

/** A machine declared able to run a template (an admin, the operator or the agent's own proof), and whether that published it. */
export const qualificationView = ({ qualification, published }: Qualified): TemplateQualification => ({
  template_id: qualification.templateId,
  machine_id: qualification.machineId,
  source: qualification.source,
  qualified_at: qualification.qualifiedAt,
  published,
});

/** `ark-cp templates import`: what the import did, template by template. */
export const importSummaryView = (summary: ImportSummary) => ({
  total: summary.total,
  created: summary.created,
  updated: summary.updated,
  unchanged: summary.unchanged,
  templates: summary.templates.map((t) => ({ index: t.index, template_id: t.templateId, name: t.name, action: t.action })),
});
