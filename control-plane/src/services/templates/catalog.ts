import type { TemplateFilter } from '../../domain/templates/filters.js';
import type { TemplateRecord } from '../../domain/templates/template.js';
import { DomainError } from '../../errors.js';
import type { KeysetPosition } from '../../store/keyset.js';
import { findPublishedTemplate, listPublishedTemplates } from '../../store/templates.js';
import type { TemplateDeps } from './deps.js';

/** The public catalog: published templates only, by name. */
export function listCatalog(
  deps: TemplateDeps,
  filter: TemplateFilter,
  after: KeysetPosition | null,
  fetch: number,
): Promise<TemplateRecord[]> {
  return listPublishedTemplates(deps.store.db, filter, after, fetch);
}

/** One published template; TEMPLATE_NOT_FOUND when it is unknown or not published. */
export async function publishedTemplate(deps: TemplateDeps, templateId: string): Promise<TemplateRecord> {
  const template = await findPublishedTemplate(deps.store.db, templateId.toLowerCase());
  if (!template) throw new DomainError('TEMPLATE_NOT_FOUND');
  return template;
}
