// What the supervisor persists per job (`<stateDir>/jobs/<job_id>.json`) and what it hands the channel.
import type { JobEventMessage, JobLimits, JobStatusMessage, LaunchJobBody, MeterReceiptMessage } from '@ark/shared';

/** The envelope fields (`v`, `sid`, `seq`, `id`) are the channel's to add. */
export type JobStatusBody = Omit<JobStatusMessage, 'v' | 'sid' | 'seq' | 'id'>;
export type MeterReceiptBody = Omit<MeterReceiptMessage, 'v' | 'sid' | 'seq' | 'id'>;
export type JobEventBody = Omit<JobEventMessage, 'v' | 'sid' | 'seq' | 'id'>;
export type JobMessageBody = JobStatusBody | MeterReceiptBody | JobEventBody;
export type JobStatus = JobStatusMessage['status'];
export type JobAccess = NonNullable<JobStatusMessage['access']>;
export type JobEvidence = NonNullable<JobStatusMessage['evidence']>;

/**
 * The channel as the supervisor sees it: a reliable, ordered queue that signs and resends. The message
 * must be durable once `enqueue` returns or its promise resolves (the agent's channel client persists
 * it); a throw or rejection leaves it with the supervisor, which offers it again later.
 */
export interface JobChannelPort {
  enqueue(message: JobMessageBody): unknown;
}

/** The agent's view of a job. `stopping` and `cleaning` are the agent's own (the wire knows their ends). */
export type JobPhase =
  | 'accepted'
  | 'pulling'
  | 'starting'
  | 'ready'
  | 'exited'
  | 'stopping'
  | 'stopped'
  | 'cleaning'
  | 'cleaned'
  | 'failed';

export type PublishedPort = { container_port: number; host_port: number; protocol: string };

export type MeterState = {
  /** Last meter_seq issued under the current fence; 0 before the first receipt. */
  seq: number;
  /** End of the last reported period (the meter start before the first receipt). */
  period_end: string;
  /** Set once the final receipt is issued; nothing is metered after it. */
  final_sent: boolean;
  /** Runtime reported in every receipt of the job so far, across fences (decimal ms; absent before the first). */
  runtime_ms_total?: string;
};

export type StopRequest = {
  reason: string;
  retrieval_window_s: number;
  requested_at: string;
};

/** How the job's container is confined, and what the confinement watch has already told (job-confinement.ts). */
export type ConfinementState = {
  /** The limits the container was created with. */
  limits: JobLimits;
  /** gvisor, kata or runc, with `+userns` when the engine remaps users (job-limits.ts chooseIsolation). */
  isolation: string;
  /** OOM kills are counted from here on (the engine's events). */
  oom_checked_until?: string;
  disk_warned?: boolean;
  egress_warned?: boolean;
  egress_unmetered_told?: boolean;
  /** Set while the container holds as many processes as its limit: told once per time it gets there. */
  pids_at_limit?: boolean;
  /** Set when the agent stopped the container for a quota: the exited status says why. */
  stopped_for?: string;
};

export const JOB_RECORD_VERSION = 1;

export type JobRecord = {
  version: typeof JOB_RECORD_VERSION;
  job_id: string;
  fence: string;
  phase: JobPhase;
  /** The launch command as received; dropped (with its secrets) once the job is cleaned. */
  launch?: LaunchJobBody;
  accepted_at: string;
  updated_at: string;
  container_name: string;
  volume_name: string;
  container_id?: string;
  /** Host port of the job's SSH listener. */
  ssh_port?: number;
  ssh_host_key_fingerprint?: string;
  /** Template ports as published (identity with host networking). */
  ports?: PublishedPort[];
  /** Ports published for the agent's own probes only (a health port the template does not publish). */
  probe_ports?: PublishedPort[];
  /** Verified readiness: the meter starts here. */
  ready_at?: string;
  evidence?: JobEvidence;
  meter?: MeterState;
  stop?: StopRequest;
  /** Set when clean_job arrives; a restarted agent finishes the clean. */
  clean_requested_at?: string;
  stopped_at?: string;
  /** End of the read-only SFTP window. */
  retrieval_until?: string;
  exit_code?: number;
  failure?: string;
  /** Absent for jobs launched before confinement (their containers have no limits). */
  confinement?: ConfinementState;
  /**
   * Messages recorded with the state change that caused them and not yet handed to the channel.
   * Written before `enqueue` and cleared after, so a crash in between resends rather than loses them.
   */
  outbox: JobMessageBody[];
};

/** Phases in which the job's container is (or is about to be) running. */
export const ACTIVE_PHASES: ReadonlySet<JobPhase> = new Set(['accepted', 'pulling', 'starting', 'ready', 'stopping']);
