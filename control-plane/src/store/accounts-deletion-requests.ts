import { randomUUID } from 'node:crypto';
import { iso } from '../clock.js';
import type { Executor } from './db.js';

/** The account's open deletion request, created if there is none (one per account, by a partial unique index). */
export async function openDeletionRequest(db: Executor, accountId: string, now: Date) {
  const existing = await db
    .selectFrom('account_deletion_requests')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('state', '=', 'PENDING')
    .executeTakeFirst();
  if (existing) return { row: existing, created: false };
  const row = { id: randomUUID(), account_id: accountId, state: 'PENDING' as const, requested_at: iso(now) };
  await db.insertInto('account_deletion_requests').values(row).execute();
  return { row, created: true };
}
