// Messages and persistence: every state change is written to the job's record together with the
// messages it causes (the outbox), and only then handed to the channel, in order, once. A channel
// that refuses keeps the rest for a retry; a restart hands over what was recorded but not handed.
import type { Clock, ClockTimer } from '@ark/shared';
import type { JobSupervisorLogger } from './job-context.js';
import type { JobAccess, JobChannelPort, JobMessageBody, JobRecord, JobStatus, JobStatusBody } from './job-record.js';
import type { JobStore } from './job-store.js';
import { boundedText, errorText, redact } from './text.js';

/** The part of a live job the outbox works on. */
export type OutboxJob = { record: JobRecord; flushing: Promise<void>; flushRetryTimer?: ClockTimer };

export type JobOutboxOptions = {
  store: JobStore;
  channel: JobChannelPort;
  clock: Clock;
  logger: JobSupervisorLogger;
  /** A channel that refused a message is offered the outbox again after this long. */
  retryMs: number;
  /** No retry is armed once the supervisor closes. */
  isClosing: () => boolean;
};

export class JobOutbox {
  private readonly options: JobOutboxOptions;

  constructor(options: JobOutboxOptions) {
    this.options = options;
  }

  /** Persists the record with `messages` in its outbox, then hands the outbox to the channel. */
  async commit(job: OutboxJob, messages: JobMessageBody[] = []): Promise<void> {
    job.record.updated_at = this.options.clock.now().toISOString();
    job.record.outbox.push(...messages);
    await this.options.store.save(job.record);
    await this.flush(job);
  }

  /** Hands the outbox to the channel in order, one flush per job at a time, so nothing is handed twice. */
  flush(job: OutboxJob): Promise<void> {
    const { channel, clock, logger, store } = this.options;
    const run = async () => {
      clock.clearTimeout(job.flushRetryTimer);
      let handed = 0;
      while (job.record.outbox.length > 0) {
        try {
          await channel.enqueue(job.record.outbox[0] as JobMessageBody);
        } catch (error) {
          logger.warn({ job_id: job.record.job_id, error: errorText(error) }, 'channel refused a job message; kept for later');
          if (!this.options.isClosing()) job.flushRetryTimer = clock.setTimeout(() => this.flush(job), this.options.retryMs);
          break;
        }
        job.record.outbox.shift();
        handed += 1;
      }
      if (handed > 0) await store.save(job.record);
    };
    job.flushing = job.flushing.then(run, run);
    return job.flushing;
  }

  /** Sends a status for a job this supervisor holds no record of (straight to the channel, nothing to persist). */
  async sendBare(jobId: string, fence: string, status: JobStatus, detail?: string): Promise<void> {
    await this.options.channel.enqueue(bareStatus(jobId, fence, status, this.options.clock.now(), detail));
  }

  /** A job_status of `record` at the clock's current time. */
  status(record: JobRecord, status: JobStatus, extra: Partial<JobStatusBody> = {}): JobStatusBody {
    return jobStatus(record, status, this.options.clock.now(), extra);
  }
}

export function jobStatus(record: JobRecord, status: JobStatus, at: Date, extra: Partial<JobStatusBody> = {}): JobStatusBody {
  return { t: 'job_status', job_id: record.job_id, fence: record.fence, status, at: at.toISOString(), ...extra };
}

export function bareStatus(jobId: string, fence: string, status: JobStatus, at: Date, detail?: string): JobStatusBody {
  return { t: 'job_status', job_id: jobId, fence, status, at: at.toISOString(), ...(detail !== undefined ? { detail } : {}) };
}

/** The access facts a ready status carries. */
export function jobAccess(record: JobRecord): JobAccess {
  return {
    ssh_port: record.ssh_port as number,
    ssh_host_key_fingerprint: record.ssh_host_key_fingerprint ?? '',
    ports: (record.ports ?? []).map((port) => ({ ...port })),
  };
}

/** Text for a status detail: bounded, and free of the job's own secrets (its engine key and env values). */
export function jobDetail(record: JobRecord, text: string): string {
  const launch = record.launch;
  const secrets =
    launch === undefined ? [] : [...(launch.engine_api_key !== undefined ? [launch.engine_api_key] : []), ...Object.values(launch.env)];
  return boundedText(redact(text, secrets));
}
