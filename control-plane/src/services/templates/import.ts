import { validateTemplateImport } from '../../domain/templates/import.js';
import { DomainError } from '../../errors.js';
import { appendAudit } from '../../store/audit.js';
import { type ImportSummary, importTemplates } from '../../store/templates.js';
import { type CommitHook, transact } from '../../store/transaction.js';
import type { TemplateDeps } from './deps.js';

/** The whole document is refused, naming every problem, when any item is wrong: nothing is written then. */
export class TemplateImportRefused extends DomainError {
  constructor(readonly problems: string[]) {
    super('VALIDATION_FAILED', problems.join('\n'));
  }
}

/**
 * Imports a catalog document: validated whole first, then every template upserted by id in one transaction, so a
 * file lands whole or not at all. The templates that changed are audited. Answers a summary.
 */
export async function importTemplateCatalog(
  deps: TemplateDeps,
  document: unknown,
  commit?: CommitHook<ImportSummary>,
): Promise<ImportSummary> {
  const validation = validateTemplateImport(document);
  if (!validation.ok) throw new TemplateImportRefused(validation.errors);
  const now = deps.clock.now();
  return transact(
    deps.store,
    async (trx) => {
      const summary = await importTemplates(trx, validation.templates, now);
      const changed = summary.templates
        .filter((t) => t.action !== 'unchanged')
        .map((t) => ({ template_id: t.templateId, action: t.action }));
      if (changed.length > 0)
        await appendAudit(trx, { at: now, actorAccountId: null, action: 'template.imported', subject: null, detail: { changed } });
      return summary;
    },
    commit,
  );
}
