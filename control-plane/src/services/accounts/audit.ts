import { type AuditRow, listAudit } from '../../store/audit.js';
import type { KeysetPosition } from '../../store/keyset.js';
import type { AccountDeps } from './deps.js';

/** The audit log, newest first (for admins). */
export function listAuditLog(deps: AccountDeps, after: KeysetPosition | null, fetch: number): Promise<AuditRow[]> {
  return listAudit(deps.store.db, after, fetch);
}
