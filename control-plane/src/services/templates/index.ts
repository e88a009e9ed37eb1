import type { ImportSummary } from '../../store/templates.js';

/** What an import did, template by template (a record the store computes; `ark-cp templates import` prints it). */
export type { ImportSummary };
import type { TemplateFilter } from '../../domain/templates/filters.js';
import type { KeysetPosition } from '../../store/keyset.js';
import type { CommitHook } from '../../store/transaction.js';
import { listCatalog, publishedTemplate } from './catalog.js';
import type { TemplateDeps } from './deps.js';
import { importTemplateCatalog } from './import.js';
import { type Qualified, type QualifyInput, qualifyTemplate } from './qualify.js';

/** The template catalog's use cases: the admin route, the public catalog and `ark-cp templates` share them. */
export function buildTemplateServices(deps: TemplateDeps) {
  return {
    importCatalog: (document: unknown, commit?: CommitHook<ImportSummary>) => importTemplateCatalog(deps, document, commit),
    qualify: (input: QualifyInput, commit?: CommitHook<Qualified>) => qualifyTemplate(deps, input, commit),
    list: (filter: TemplateFilter, after: KeysetPosition | null, fetch: number) => listCatalog(deps, filter, after, fetch),
    published: (templateId: string) => publishedTemplate(deps, templateId),
  };
}

export type TemplateServices = ReturnType<typeof buildTemplateServices>;
