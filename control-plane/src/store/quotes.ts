import type { Selectable } from 'kysely';
import type { QuoteRecord } from '../domain/quotes/quote.js';
import { type Executor, isPostgres, type Tx } from './db.js';
import type { QuotesTable } from './tables/jobs.js';

// Quotes: inserted once, consumed once by a reservation, purged some time after they expire unused.

type QuoteRow = Selectable<QuotesTable>;

function toRecord(row: QuoteRow): QuoteRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    machineId: row.machine_id,
    offerId: row.offer_id,
    offerVersion: row.offer_version,
    gpuCount: Number(row.gpu_count),
    machineRateMicroPerHour: row.machine_rate_micro_per_hour,
    platformFeeBps: row.platform_fee_bps,
    budgetMicro: row.budget_micro,
    durationLimitS: row.duration_limit_s,
    estimatedTotalMicro: row.estimated_total_micro,
    manifestHash: row.manifest_hash,
    imageDigest: row.image_digest,
    templateId: row.template_id,
    termsVersion: row.terms_version,
    includedDiskGib: Number(row.included_disk_gib),
    includedEgressGib: Number(row.included_egress_gib),
    hostCeilingAt: new Date(row.host_ceiling_at),
    createdAt: new Date(row.created_at),
    expiresAt: new Date(row.expires_at),
    usedAt: row.used_at === null ? null : new Date(row.used_at),
    jobId: row.job_id,
  };
}

export async function insertQuote(db: Executor, q: QuoteRecord): Promise<void> {
  await db
    .insertInto('quotes')
    .values({
      id: q.id,
      account_id: q.accountId,
      machine_id: q.machineId,
      offer_id: q.offerId,
      offer_version: q.offerVersion,
      gpu_count: BigInt(q.gpuCount),
      machine_rate_micro_per_hour: q.machineRateMicroPerHour,
      platform_fee_bps: q.platformFeeBps,
      budget_micro: q.budgetMicro,
      duration_limit_s: q.durationLimitS,
      estimated_total_micro: q.estimatedTotalMicro,
      manifest_hash: q.manifestHash,
      image_digest: q.imageDigest,
      template_id: q.templateId,
      terms_version: q.termsVersion,
      included_disk_gib: BigInt(q.includedDiskGib),
      included_egress_gib: BigInt(q.includedEgressGib),
      host_ceiling_at: q.hostCeilingAt.toISOString(),
      created_at: q.createdAt.toISOString(),
      expires_at: q.expiresAt.toISOString(),
      used_at: null,
      job_id: null,
    })
    .execute();
}

/** The quote, locked for the reservation's transaction on Postgres (SQLite serialises writers). */
export async function lockQuote(trx: Tx, id: string): Promise<QuoteRecord | null> {
  let query = trx.selectFrom('quotes').selectAll().where('id', '=', id);
  if (isPostgres(trx)) query = query.forUpdate();
  const row = await query.executeTakeFirst();
  return row ? toRecord(row) : null;
}

export async function findQuote(db: Executor, id: string): Promise<QuoteRecord | null> {
  const row = await db.selectFrom('quotes').selectAll().where('id', '=', id).executeTakeFirst();
  return row ? toRecord(row) : null;
}

/** Marks the quote used by `jobId`, once: false when another reservation got there first. */
export async function consumeQuote(db: Executor, id: string, jobId: string, now: Date): Promise<boolean> {
  const result = await db
    .updateTable('quotes')
    .set({ used_at: now.toISOString(), job_id: jobId })
    .where('id', '=', id)
    .where('used_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Deletes quotes that expired unused more than `graceMs` ago; used ones stay as the jobs' evidence. */
export async function purgeExpiredQuotes(db: Executor, now: Date, graceMs = 3_600_000, limit = 10_000): Promise<number> {
  const before = new Date(now.getTime() - graceMs).toISOString();
  const ids = db.selectFrom('quotes').select('id').where('used_at', 'is', null).where('expires_at', '<', before).limit(limit);
  const result = await db.deleteFrom('quotes').where('id', 'in', ids).executeTakeFirst();
  return Number(result.numDeletedRows);
}
