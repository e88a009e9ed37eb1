import { PostgresAdapter, type Selectable } from 'kysely';
import type { AdmissionKind } from '../domain/admissions/admissions.js';
import { iso } from '../clock.js';
import { type Executor, fromBool, toBool, type Tx } from './db.js';
import type { AcceptanceAuthorizationsTable, AdmissionStateTable } from './tables/admissions.js';

export type AcceptanceAuthorizationRow = Selectable<AcceptanceAuthorizationsTable>;

export interface AdmissionState {
  enabled: boolean;
  reason: string | null;
  changedBy: string | null;
  changedAt: string | null;
  version: bigint;
}

const PLATFORM = 'platform';

function stateOf(row: Selectable<AdmissionStateTable> | undefined): AdmissionState {
  // The migration inserts the row; a missing one reads as open, as a fresh install is.
  if (!row) return { enabled: true, reason: null, changedBy: null, changedAt: null, version: 0n };
  return { enabled: toBool(row.enabled), reason: row.reason, changedBy: row.changed_by, changedAt: row.changed_at, version: row.version };
}

/**
 * The admission state. `lock: 'share'` (an admitted operation) keeps a pause from committing under it on Postgres,
 * `'update'` (the pause itself) waits for those in flight; SQLite serialises writers anyway.
 */
export async function readAdmissionState(db: Executor, lock: 'share' | 'update' | null = null): Promise<AdmissionState> {
  let query = db.selectFrom('admission_state').selectAll().where('id', '=', PLATFORM);
  if (lock && db.getExecutor().adapter instanceof PostgresAdapter) query = lock === 'share' ? query.forShare() : query.forUpdate();
  return stateOf(await query.executeTakeFirst());
}

export async function writeAdmissionState(
  trx: Tx,
  input: { enabled: boolean; reason: string; changedBy: string; at: Date },
): Promise<AdmissionState> {
  const row = await trx
    .updateTable('admission_state')
    .set((eb) => ({
      enabled: fromBool(input.enabled),
      reason: input.reason,
      changed_by: input.changedBy,
      changed_at: iso(input.at),
      version: eb('version', '+', 1n),
    }))
    .where('id', '=', PLATFORM)
    .returningAll()
    .executeTakeFirstOrThrow();
  return stateOf(row);
}

export async function insertAcceptanceAuthorization(trx: Tx, row: AcceptanceAuthorizationRow): Promise<void> {
  await trx.insertInto('acceptance_authorizations').values(row).execute();
}

export async function findAcceptanceAuthorization(db: Executor, id: string): Promise<AcceptanceAuthorizationRow | null> {
  return (await db.selectFrom('acceptance_authorizations').selectAll().where('id', '=', id).executeTakeFirst()) ?? null;
}

/**
 * Marks one authorization used, only if it is still unused, unexpired, and for this account and kind: a
 * compare-and-set, so two operations presenting it at once cannot both pass.
 */
export async function consumeAcceptanceAuthorization(
  trx: Executor,
  input: { id: string; accountId: string; kind: AdmissionKind; now: Date; reference: string | null },
): Promise<boolean> {
  const now = iso(input.now);
  const result = await trx
    .updateTable('acceptance_authorizations')
    .set({ consumed_at: now, consumed_reference: input.reference })
    .where('id', '=', input.id)
    .where('account_id', '=', input.accountId)
    .where('kind', '=', input.kind)
    .where('consumed_at', 'is', null)
    .where('expires_at', '>', now)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

/** The oldest unused, unexpired authorization of an account for a kind (for operations no client presents: deposits). */
export async function openAuthorizationOf(db: Executor, accountId: string, kind: AdmissionKind, now: Date): Promise<string | null> {
  const row = await db
    .selectFrom('acceptance_authorizations')
    .select('id')
    .where('account_id', '=', accountId)
    .where('kind', '=', kind)
    .where('consumed_at', 'is', null)
    .where('expires_at', '>', iso(now))
    .orderBy('created_at')
    .orderBy('id')
    .limit(1)
    .executeTakeFirst();
  return row?.id ?? null;
}
