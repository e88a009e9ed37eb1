import type { JobState } from '@ark/shared';
import { accessGrantOf, type JobAccessGrant, type JobEventRecord, type JobRecord } from '../../domain/jobs/job.js';
import { DomainError } from '../../errors.js';
import { listJobEvents } from '../../store/job-events.js';
import { accountIdOfJob, findJob, findJobRow, listJobsOfAccount, toJobRecord } from '../../store/jobs.js';
import type { JobDeps } from './deps.js';

// What routes and the CLI read about jobs. Reads take no locks and open no transaction.

export interface JobReads {
  find(jobId: string): Promise<JobRecord | null>;
  /** The renter a job belongs to (null: no such job), for owner-or-admin checks before reading more. */
  ownerOf(jobId: string): Promise<string | null>;
  /** The account's jobs, newest first, after the (created_at, id) position. */
  listOfAccount(accountId: string, filter: { state?: JobState }, after: [string, string] | null, fetch: number): Promise<JobRecord[]>;
  /** Events after `afterSeq`, oldest first, at most `fetch`. */
  events(jobId: string, afterSeq: bigint, fetch: number): Promise<JobEventRecord[]>;
  /** How the renter who owns the job reaches it now (404 for anyone else; 403 JOB_ACCESS_UNAVAILABLE in other states). */
  access(jobId: string, accountId: string): Promise<JobAccessGrant>;
}

export function jobReads(deps: JobDeps): JobReads {
  const db = deps.store.db;
  return {
    find: (jobId) => findJob(db, jobId),
    ownerOf: (jobId) => accountIdOfJob(db, jobId),
    listOfAccount: (accountId, filter, after, fetch) => listJobsOfAccount(db, accountId, filter, after, fetch),
    events: (jobId, afterSeq, fetch) => listJobEvents(db, jobId, afterSeq, fetch),
    async access(jobId, accountId) {
      const row = await findJobRow(db, jobId);
      if (!row || row.account_id !== accountId) throw new DomainError('NOT_FOUND');
      const job = toJobRecord(row);
      const engineApiKey =
        job.state === 'RUNNING' && job.template?.kind === 'model' ? deps.secrets.engineApiKeyOf(job.id, row.engine_key_sealed) : null;
      const grant = accessGrantOf(job, deps.clock.now(), { defaultHost: deps.settings.accessHost, engineApiKey });
      if (grant === null) throw new DomainError('JOB_ACCESS_UNAVAILABLE', `Access is not available while the job is ${job.state}.`);
      return grant;
    },
  };
}
