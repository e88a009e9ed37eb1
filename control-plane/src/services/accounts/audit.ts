import { listAudit } from '../../store/audit.js';
import type { KeysetPosition } from '../../store/keyset.js';
import type { AccountDeps } from './deps.js';
import { type AuditRecord, toAuditRecord } from './records.js';

/** The audit log, newest first (for admins). */
export async function listAuditLog(deps: AccountDeps, after: KeysetPosition | null, fetch: number): Promise<AuditRecord[]> {
  return (await listAudit(deps.store.db, after, fetch)).map(toAuditRecord);
}
