import type { Executor, Tx } from './db.js';
import type { JobCreditsTable } from './tables/earnings.js';

// Automatic credits (issue 24 item 3): one row per job, by its primary key. The row is inserted first in the credit's
// transaction: a second attempt (a retried sweep, a replica racing it) inserts nothing and posts nothing.

export type JobCreditRow = JobCreditsTable;

/** Claims the job's credit: true when this transaction inserted it, false when the job already has one. */
export async function claimJobCredit(trx: Tx, row: JobCreditRow): Promise<boolean> {
  const inserted = await trx
    .insertInto('job_credits')
    .values(row)
    .onConflict((oc) => oc.column('job_id').doNothing())
    .returning('job_id')
    .executeTakeFirst();
  return inserted !== undefined;
}

/** The credit of one job, if it has one. */
export async function jobCreditOf(db: Executor, jobId: string): Promise<JobCreditRow | undefined> {
  return db.selectFrom('job_credits').selectAll().where('job_id', '=', jobId).executeTakeFirst();
}

/** Credits an account received as a renter or gave as a host, newest first, at most `limit`. */
export async function creditsOfAccount(db: Executor, accountId: string, side: 'renter' | 'host', limit: number): Promise<JobCreditRow[]> {
  return db
    .selectFrom('job_credits')
    .selectAll()
    .where(side === 'renter' ? 'renter_account_id' : 'host_account_id', '=', accountId)
    .where('credit_micro', '>', 0n)
    .orderBy('created_at', 'desc')
    .orderBy('job_id', 'desc')
    .limit(limit)
    .execute();
}
