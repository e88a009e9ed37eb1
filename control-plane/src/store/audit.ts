import { randomUUID } from 'node:crypto';
import type { Executor } from './db.js';

export interface AuditEntry {
  at: Date;
  actorAccountId: string | null;
  action: string;
  subject?: string | null;
  detail?: Record<string, unknown>;
}

/** Appends one audit row; call it inside the transaction of the audited change. */
export async function appendAudit(db: Executor, entry: AuditEntry): Promise<void> {
  await db
    .insertInto('audit_log')
    .values({
      id: randomUUID(),
      at: entry.at.toISOString(),
      actor_account_id: entry.actorAccountId,
      action: entry.action,
      subject: entry.subject ?? null,
      detail: JSON.stringify(entry.detail ?? {}),
    })
    .execute();
}
