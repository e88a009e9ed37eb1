import type { TemplateBackend, TemplateFit, TemplateQualificationSource, TemplateRuntime, TemplateSpec } from '@ark/shared';
import type { ExpressionBuilder, Selectable } from 'kysely';
import { computeFit, machineDeviceVram } from '../domain/templates/fit.js';
import type { TemplateFilter } from '../domain/templates/filters.js';
import type { ImportedTemplate } from '../domain/templates/import.js';
import { sameDefinition, type TemplateDefinition, type TemplateRecord } from '../domain/templates/template.js';
import { iso } from '../clock.js';
import { DomainError } from '../errors.js';
import { type Executor, fromJson, isUniqueViolation, toJson } from './db.js';
import { type KeysetPosition, keysetPage } from './keyset.js';
import type { Database } from './schema.js';
import type { TemplatesTable } from './tables/templates.js';

type TemplateRow = Selectable<TemplatesTable>;

/**
 * Published = qualified on at least one admitted machine: the machine exists and its host is not blocked by an
 * admin. The only place that decides publication.
 */
function isPublished(eb: ExpressionBuilder<Database, 'templates'>) {
  return eb.exists(
    eb
      .selectFrom('template_qualifications as q')
      .innerJoin('machines as m', 'm.id', 'q.machine_id')
      .leftJoin('host_profiles as hp', 'hp.account_id', 'm.owner_account_id')
      .select('q.template_id')
      .whereRef('q.template_id', '=', 'templates.id')
      .where((w) => w.or([w('hp.hosting_blocked', 'is', null), w('hp.hosting_blocked', '=', 0n)])),
  );
}

async function runtimesOf(db: Executor, templateIds: string[]): Promise<Map<string, TemplateRuntime[]>> {
  const byTemplate = new Map<string, TemplateRuntime[]>();
  if (templateIds.length === 0) return byTemplate;
  const rows = await db
    .selectFrom('template_runtimes')
    .select(['template_id', 'backend', 'image_digest'])
    .where('template_id', 'in', templateIds)
    .orderBy('template_id')
    .orderBy('backend')
    .execute();
  for (const row of rows) {
    const list = byTemplate.get(row.template_id) ?? [];
    list.push({ backend: row.backend, image_digest: row.image_digest });
    byTemplate.set(row.template_id, list);
  }
  return byTemplate;
}

function toRecord(row: TemplateRow, runtimes: TemplateRuntime[]): TemplateRecord {
  return {
    id: row.id,
    kind: row.kind,
    name: row.name,
    description: row.description,
    minVramBytes: row.min_vram_bytes,
    recommendedVramBytes: row.recommended_vram_bytes,
    runtimes,
    spec: fromJson<TemplateSpec>(row.spec) as TemplateSpec,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

async function withRuntimes(db: Executor, rows: TemplateRow[]): Promise<TemplateRecord[]> {
  const runtimes = await runtimesOf(
    db,
    rows.map((r) => r.id),
  );
  return rows.map((row) => toRecord(row, runtimes.get(row.id) ?? []));
}

/** Any template, published or not. */
export async function findTemplate(db: Executor, templateId: string): Promise<TemplateRecord | null> {
  const row = await db.selectFrom('templates').selectAll().where('id', '=', templateId).executeTakeFirst();
  if (!row) return null;
  const [record] = await withRuntimes(db, [row]);
  return record ?? null;
}

/** A template the public may see: null when unknown or not published. */
export async function findPublishedTemplate(db: Executor, templateId: string): Promise<TemplateRecord | null> {
  const row = await db
    .selectFrom('templates')
    .selectAll()
    .where('id', '=', templateId)
    .where((eb) => isPublished(eb))
    .executeTakeFirst();
  if (!row) return null;
  const [record] = await withRuntimes(db, [row]);
  return record ?? null;
}

export async function isTemplatePublished(db: Executor, templateId: string): Promise<boolean> {
  return (await findPublishedTemplate(db, templateId)) !== null;
}

/** Has this machine been qualified (by its agent or an admin) to run this template? For quotes and placement. */
export async function isTemplateQualifiedOn(db: Executor, templateId: string, machineId: string): Promise<boolean> {
  const row = await db
    .selectFrom('template_qualifications')
    .select('template_id')
    .where('template_id', '=', templateId)
    .where('machine_id', '=', machineId)
    .executeTakeFirst();
  return row !== undefined;
}

/** Published templates matching the filter, ordered by (name, id), after the cursor position [name, id]. */
export async function listPublishedTemplates(
  db: Executor,
  filter: TemplateFilter,
  after: KeysetPosition | null,
  fetch: number,
): Promise<TemplateRecord[]> {
  let query = db
    .selectFrom('templates')
    .selectAll()
    .where((eb) => isPublished(eb));
  if (filter.kind !== undefined) query = query.where('kind', '=', filter.kind);
  if (filter.maxMinVramBytes !== undefined) query = query.where('min_vram_bytes', '<=', filter.maxMinVramBytes);
  if (filter.backend !== undefined) {
    const backend: TemplateBackend = filter.backend;
    query = query.where((eb) =>
      eb.exists(
        eb
          .selectFrom('template_runtimes as r')
          .select('r.template_id')
          .whereRef('r.template_id', '=', 'templates.id')
          .where('r.backend', '=', backend),
      ),
    );
  }
  const rows = await keysetPage(query, ['name', 'id'], 'asc', after, fetch).execute();
  return withRuntimes(db, rows);
}

export type ImportAction = 'created' | 'updated' | 'unchanged';

export interface ImportSummary {
  total: number;
  created: number;
  updated: number;
  unchanged: number;
  templates: Array<{ index: number; templateId: string; name: string; action: ImportAction }>;
}

/**
 * Upserts validated import items by template id; call it inside one transaction so a file lands whole or not at all.
 * An item without an id updates the template of the same name if one exists. created_at survives updates.
 */
export async function importTemplates(db: Executor, items: ImportedTemplate[], now: Date): Promise<ImportSummary> {
  const summary: ImportSummary = { total: items.length, created: 0, updated: 0, unchanged: 0, templates: [] };
  for (const [index, item] of items.entries()) {
    const { idGiven, ...definition } = item;
    const byName = await db.selectFrom('templates').select('id').where('name', '=', definition.name).executeTakeFirst();
    if (byName && byName.id !== definition.id) {
      if (idGiven) {
        throw new DomainError(
          'TEMPLATE_NAME_TAKEN',
          `templates[${index}].name "${definition.name}" is already used by template ${byName.id}`,
        );
      }
      definition.id = byName.id;
    }
    const action = await upsertTemplate(db, definition, now, index);
    summary[action] += 1;
    summary.templates.push({ index, templateId: definition.id, name: definition.name, action });
  }
  return summary;
}

/** Inserts or replaces one template and its runtimes. */
export async function upsertTemplate(db: Executor, definition: TemplateDefinition, now: Date, index = 0): Promise<ImportAction> {
  const existing = await findTemplate(db, definition.id);
  if (existing && sameDefinition(existingDefinition(existing), definition)) return 'unchanged';
  const at = iso(now);
  const columns = {
    kind: definition.kind,
    name: definition.name,
    description: definition.description,
    min_vram_bytes: definition.minVramBytes,
    recommended_vram_bytes: definition.recommendedVramBytes,
    spec: toJson(definition.spec),
    updated_at: at,
  };
  try {
    if (existing) await db.updateTable('templates').set(columns).where('id', '=', definition.id).execute();
    else
      await db
        .insertInto('templates')
        .values({ id: definition.id, ...columns, created_at: at })
        .execute();
  } catch (error) {
    if (isUniqueViolation(error))
      throw new DomainError('TEMPLATE_NAME_TAKEN', `templates[${index}].name "${definition.name}" is already used by another template`);
    throw error;
  }
  await db.deleteFrom('template_runtimes').where('template_id', '=', definition.id).execute();
  await db
    .insertInto('template_runtimes')
    .values(definition.runtimes.map((r) => ({ template_id: definition.id, backend: r.backend, image_digest: r.image_digest })))
    .execute();
  return existing ? 'updated' : 'created';
}

function existingDefinition(record: TemplateRecord): TemplateDefinition {
  const { createdAt: _c, updatedAt: _u, ...definition } = record;
  return definition;
}

export interface QualificationRecord {
  templateId: string;
  machineId: string;
  source: TemplateQualificationSource;
  qualifiedAt: string;
}

async function upsertQualification(
  db: Executor,
  input: { templateId: string; machineId: string; source: TemplateQualificationSource; now: Date; detail: Record<string, unknown> },
): Promise<QualificationRecord> {
  const qualifiedAt = iso(input.now);
  // A repeat proof refreshes the record rather than piling up rows.
  await db
    .insertInto('template_qualifications')
    .values({
      template_id: input.templateId,
      machine_id: input.machineId,
      source: input.source,
      qualified_at: qualifiedAt,
      detail: toJson(input.detail),
    })
    .onConflict((oc) =>
      oc.columns(['template_id', 'machine_id', 'source']).doUpdateSet({ qualified_at: qualifiedAt, detail: toJson(input.detail) }),
    )
    .execute();
  return { templateId: input.templateId, machineId: input.machineId, source: input.source, qualifiedAt };
}

export interface AgentQualificationProof {
  /** The digest the agent pulled and verified; must be one of the template's runtimes. */
  imageDigest: string;
  /** Measured VRAM of every device assigned to the job (empty without GPUs). */
  deviceVramBytes: readonly bigint[];
  jobId?: string;
  /** The readiness evidence the agent reported, kept for the record. */
  evidence?: Record<string, unknown>;
}

export type AgentQualificationResult =
  | { recorded: true; qualification: QualificationRecord }
  | { recorded: false; reason: 'template_not_found' | 'image_not_in_template' | 'vram_does_not_fit' };

/**
 * Records that a machine's agent proved it can run a template: the image was pulled by one of the template's
 * digests and the VRAM fits. Called by the job lifecycle when an agent reports a template job `ready`, inside
 * that handler's transaction. A proof that does not hold records nothing.
 */
export async function recordAgentQualification(
  db: Executor,
  input: { templateId: string; machineId: string; now: Date; detail: AgentQualificationProof },
): Promise<AgentQualificationResult> {
  const template = await findTemplate(db, input.templateId);
  if (!template) return { recorded: false, reason: 'template_not_found' };
  const runtime = template.runtimes.find((r) => r.image_digest === input.detail.imageDigest);
  if (!runtime) return { recorded: false, reason: 'image_not_in_template' };
  const fit = computeFit(template, input.detail.deviceVramBytes);
  if (!fit.fits) return { recorded: false, reason: 'vram_does_not_fit' };
  const qualification = await upsertQualification(db, {
    templateId: input.templateId,
    machineId: input.machineId,
    source: 'agent',
    now: input.now,
    detail: {
      image_digest: input.detail.imageDigest,
      backend: runtime.backend,
      device_vram_bytes: input.detail.deviceVramBytes.map((v) => v.toString()),
      ...(input.detail.jobId ? { job_id: input.detail.jobId } : {}),
      ...(input.detail.evidence ? { evidence: input.detail.evidence } : {}),
    },
  });
  return { recorded: true, qualification };
}

/**
 * An admin (or the operator CLI, actorAccountId null) declares a machine able to run a template (the use case audits
 * it). TEMPLATE_NOT_FOUND when the template does not exist, NOT_FOUND when the machine does not.
 */
export async function recordAdminQualification(
  db: Executor,
  input: { templateId: string; machineId: string; now: Date; actorAccountId: string | null; reason: string; via: 'api' | 'cli' },
): Promise<QualificationRecord> {
  const template = await findTemplate(db, input.templateId);
  if (!template) throw new DomainError('TEMPLATE_NOT_FOUND', 'No template has this id.');
  const machine = await db.selectFrom('machines').select('id').where('id', '=', input.machineId).executeTakeFirst();
  if (!machine) throw new DomainError('NOT_FOUND', 'No machine has this id.');
  return upsertQualification(db, {
    templateId: input.templateId,
    machineId: input.machineId,
    source: 'admin',
    now: input.now,
    detail: { reason: input.reason, via: input.via, actor_account_id: input.actorAccountId },
  });
}

/**
 * For the offers list: loads a published template once and returns the fit of any machine from its measured
 * device VRAM (one entry per GPU). TEMPLATE_NOT_FOUND when the template is unknown or unpublished.
 */
export async function templateFitCalculator(
  db: Executor,
  templateId: string,
): Promise<(deviceVramBytes: readonly bigint[]) => TemplateFit> {
  const template = await findPublishedTemplate(db, templateId);
  if (!template) throw new DomainError('TEMPLATE_NOT_FOUND');
  return (deviceVramBytes) => computeFit(template, deviceVramBytes);
}

/** One machine's fit for a published template, from its measured GPUs; null when either is unknown (or unpublished). */
export async function fitForMachine(db: Executor, templateId: string, machineId: string): Promise<TemplateFit | null> {
  const template = await findPublishedTemplate(db, templateId);
  if (!template) return null;
  const machine = await db.selectFrom('machines').select(['gpu_count', 'vram_bytes']).where('id', '=', machineId).executeTakeFirst();
  if (!machine) return null;
  return computeFit(template, machineDeviceVram({ gpuCount: machine.gpu_count, vramBytes: machine.vram_bytes }));
}
