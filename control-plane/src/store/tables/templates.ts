import type { TemplateBackend, TemplateKind, TemplateQualificationSource } from '@ark/shared';

/** One catalog template. Published is derived: at least one qualification on an admitted machine. */
export interface TemplatesTable {
  id: string;
  kind: TemplateKind;
  /** Unique: the catalog's sort key and the derivation source of ids in import files without ids. */
  name: string;
  description: string;
  /** bigint so the min_vram_bytes filter compares numbers, not strings. */
  min_vram_bytes: bigint;
  recommended_vram_bytes: bigint | null;
  /** TemplateSpec as JSON text. */
  spec: string;
  created_at: string;
  updated_at: string;
}

/** A built image of a template for one backend, pinned by digest. */
export interface TemplateRuntimesTable {
  template_id: string;
  backend: TemplateBackend;
  image_digest: string;
}

/** A machine proved (agent) or was declared (admin) able to run a template. One row per source. */
export interface TemplateQualificationsTable {
  template_id: string;
  machine_id: string;
  source: TemplateQualificationSource;
  qualified_at: string;
  /** JSON text: the agent's evidence, or the admin's reason. */
  detail: string;
}

export interface TemplatesTables {
  templates: TemplatesTable;
  template_runtimes: TemplateRuntimesTable;
  template_qualifications: TemplateQualificationsTable;
}
