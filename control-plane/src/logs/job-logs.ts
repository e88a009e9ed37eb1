import type { JobLogLine, JobLogs } from '@ark/shared';
import type { Clock } from '../clock.js';
import type { JobRecord } from '../domain/jobs/job.js';
import { DomainError } from '../errors.js';
import type { LogReader, LogStreamFailure, LogTunnel } from './tunnel.js';

// A job's logs (issue 25 item 2): which jobs have them, and a request's answer as the API's lines or errors. The
// lines live on the job's machine (host-agent/src/jobs/job-logs.ts); the caller (http/routes/job-logs.ts) has
// authorized the reader and reached the replica that holds the machine's channel.

/** How long a one-off request may wait for the machine's whole answer (the agent paces a big one at the job's rate bound). */
const ANSWER_TIMEOUT_MS = 120_000;

export interface LogQuery {
  /** Lines: the last ones, or (with `after`) those after the cursor. */
  limit: number;
  after?: string;
}

export class JobLogReader {
  readonly #tunnel: LogTunnel;
  readonly #clock: Clock;

  constructor(tunnel: LogTunnel, clock: Clock) {
    this.#tunnel = tunnel;
    this.#clock = clock;
  }

  /** Logs are read while the job runs (or is being stopped) and through its retrieval window after: 409 JOB_LOGS_UNAVAILABLE else. */
  static assertReadable(job: JobRecord, now: Date): void {
    if (job.state === 'RUNNING' || job.state === 'STOPPING') return;
    if (job.state === 'STOPPED' && job.retrievalUntil !== null && now.getTime() < job.retrievalUntil.getTime()) return;
    const when =
      job.state === 'STOPPED'
        ? 'its retrieval window has ended'
        : job.state === 'RESERVED' || job.state === 'STARTING'
          ? `it is ${job.state} (its container has not started yet)`
          : `it is ${job.state}`;
    throw new DomainError(
      'JOB_LOGS_UNAVAILABLE',
      `Logs are kept while the job runs and through its retrieval window after it stopped; ${when}.`,
    );
  }

  /** The lines asked for, once the machine has sent them all; the cursor to ask for what follows. */
  read(job: JobRecord, query: LogQuery): Promise<JobLogs> {
    JobLogReader.assertReadable(job, this.#clock.now());
    return new Promise((resolve, reject) => {
      const lines: JobLogLine[] = [];
      const timer = this.#clock.setTimeout(() => {
        stream.cancel();
        reject(new DomainError('JOB_LOGS_UNREACHABLE', 'The machine did not send the lines in time.'));
      }, ANSWER_TIMEOUT_MS);
      timer.unref();
      const stream = this.#tunnel.open(
        job.machineId,
        { job_id: job.id, limit: query.limit, follow: false, ...(query.after === undefined ? {} : { after: query.after }) },
        {
          lines: (more) => lines.push(...more),
          ended: (failure) => {
            this.#clock.clearTimeout(timer);
            if (failure !== undefined) return reject(logsError(failure.reason, failure.detail));
            resolve({ lines, cursor: lines.at(-1)?.cursor ?? query.after ?? null });
          },
        },
      );
    });
  }

  /** Streams the lines asked for, then each new one, to `reader` until the container ends, a failure or `cancel`. */
  follow(job: JobRecord, query: LogQuery, reader: LogReader): { cancel: () => void } {
    JobLogReader.assertReadable(job, this.#clock.now());
    return this.#tunnel.open(
      job.machineId,
      { job_id: job.id, limit: query.limit, follow: true, ...(query.after === undefined ? {} : { after: query.after }) },
      reader,
    );
  }
}

/** A stream's failure as the API's error. */
export function logsError(reason: LogStreamFailure, detail: string): DomainError {
  if (reason === 'not_found') return new DomainError('JOB_LOGS_UNAVAILABLE', `The job's logs are no longer on its machine: ${detail}.`);
  return new DomainError('JOB_LOGS_UNREACHABLE', `The job's machine could not be reached for its logs: ${detail}.`);
}
