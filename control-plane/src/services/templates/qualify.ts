import { appendAudit } from '../../store/audit.js';
import { isTemplatePublished, type QualificationRecord, recordAdminQualification } from '../../store/templates.js';
import { type CommitHook, transact } from '../../store/transaction.js';
import type { TemplateDeps } from './deps.js';

export interface QualifyInput {
  templateId: string;
  machineId: string;
  /** The admin who qualifies, or null for the operator CLI. */
  actorAccountId: string | null;
  reason: string;
  via: 'api' | 'cli';
}

export interface Qualified {
  qualification: QualificationRecord;
  /** Whether the template is published now (qualified on an admitted machine). */
  published: boolean;
}

/**
 * An admin or the operator declares a machine able to run a template, which publishes it. TEMPLATE_NOT_FOUND when
 * the template does not exist, NOT_FOUND when the machine does not. Audited.
 */
export async function qualifyTemplate(deps: TemplateDeps, input: QualifyInput, commit?: CommitHook<Qualified>): Promise<Qualified> {
  const templateId = input.templateId.toLowerCase();
  const machineId = input.machineId.toLowerCase();
  const { actorAccountId, reason, via } = input;
  const now = deps.clock.now();
  return transact(
    deps.store,
    async (trx) => {
      const qualification = await recordAdminQualification(trx, { templateId, machineId, now, actorAccountId, reason, via });
      await appendAudit(trx, {
        at: now,
        actorAccountId,
        action: 'template.qualify',
        subject: templateId,
        detail: { machine_id: machineId, reason, via },
      });
      return { qualification, published: await isTemplatePublished(trx, templateId) };
    },
    commit,
  );
}
