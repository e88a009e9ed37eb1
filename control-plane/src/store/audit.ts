import { randomUUID } from 'node:crypto';
import type { Selectable } from 'kysely';
import { iso } from '../clock.js';
import type { Executor } from './db.js';
import { type KeysetPosition, keysetPage } from './keyset.js';
import type { AuditLogTable } from './tables/foundation.js';

export type AuditRow = Selectable<AuditLogTable>;

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
      at: iso(entry.at),
      actor_account_id: entry.actorAccountId,
      action: entry.action,
      subject: entry.subject ?? null,
      detail: JSON.stringify(entry.detail ?? {}),
    })
    .execute();
}

/** The audit log, newest first, after the cursor position [at, id]. */
export async function listAudit(db: Executor, after: KeysetPosition | null, fetch: number): Promise<AuditRow[]> {
  return keysetPage(db.selectFrom('audit_log').selectAll(), ['at', 'id'], 'desc', after, fetch).execute();
}
