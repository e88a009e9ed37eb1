import { type Static, Type } from '@sinclair/typebox';
import { Int64String, MicroAmount, Nullable, Rfc3339Utc, Uuid } from '../formats.js';
import { PageQuery } from './common.js';
import { JOB_LOG_TAIL_MAX_LINES, JobLogCursor, JobLogLine } from '../channel/messages.js';
import { JOB_DURATION_LIMIT_MAX_S } from './quotes.js';

// Jobs (contract part 2 "Job", "Job access"; part 3 "Job states"; part 4 "Jobs").

export const JOB_STATES = [
  'RESERVED',
  'STARTING',
  'RUNNING',
  'STOPPING',
  'STOPPED',
  'CLEANING',
  'CLOSED',
  'FAILED',
  'RECONCILING',
] as const satisfies readonly string[];
export const JobState = Type.Union([
  Type.Literal('RESERVED'),
  Type.Literal('STARTING'),
  Type.Literal('RUNNING'),
  Type.Literal('STOPPING'),
  Type.Literal('STOPPED'),
  Type.Literal('CLEANING'),
  Type.Literal('CLOSED'),
  Type.Literal('FAILED'),
  Type.Literal('RECONCILING'),
]);
export type JobState = Static<typeof JobState>;

/** Limits on a reservation body. */
export const JOB_LIMITS = {
  sshPublicKeysMax: 16,
  sshPublicKeyMaxLength: 16_384,
  envMax: 64,
  envNameMaxLength: 128,
  envValueMaxLength: 8192,
  stopReasonMaxLength: 500,
} as const;

/** Renter environment variables: POSIX-style names. Names starting with `ARK_` are reserved for the platform. */
export const JOB_ENV_NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_]*$';

/** `POST /api/v1/jobs`: reserve the quoted machine. */
export const JobCreateRequest = Type.Object(
  {
    quote_id: Uuid,
    /** OpenSSH public keys (`ssh-ed25519 AAAA... comment`) that may open the job's SSH endpoint. */
    ssh_public_keys: Type.Array(Type.String({ minLength: 1, maxLength: JOB_LIMITS.sshPublicKeyMaxLength }), {
      minItems: 1,
      maxItems: JOB_LIMITS.sshPublicKeysMax,
    }),
    env: Type.Optional(
      Type.Record(
        Type.String({ pattern: JOB_ENV_NAME_PATTERN, maxLength: JOB_LIMITS.envNameMaxLength }),
        Type.String({ maxLength: JOB_LIMITS.envValueMaxLength }),
        { maxProperties: JOB_LIMITS.envMax, additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
export type JobCreateRequest = Static<typeof JobCreateRequest>;

/** 202 of `POST /api/v1/jobs`: the persisted job, to be polled with `GET /api/v1/jobs/{id}`. */
export const JobCreated = Type.Object({ job_id: Uuid, state: Type.Literal('RESERVED') }, { additionalProperties: false });
export type JobCreated = Static<typeof JobCreated>;

/** The template a job was quoted for (contract: contents not shown). */
export const JobTemplateSummary = Type.Object(
  {
    template_id: Uuid,
    name: Type.String(),
    kind: Type.Union([Type.Literal('model'), Type.Literal('classical'), Type.Literal('custom')]),
  },
  { additionalProperties: false },
);
export type JobTemplateSummary = Static<typeof JobTemplateSummary>;

/**
 * Contract part 2, Job. Beside the contract's fields the view carries `job_version` (the optimistic version a budget
 * extension names as expected_job_version; it changes with the job's state, funding or binding, never with metering
 * progress), `funded_budget_micro`, `duration_limit_s`, `close_reason` and `created_at`.
 */
export const Job = Type.Object(
  {
    job_id: Uuid,
    state: JobState,
    cumulative_charge_micro: MicroAmount,
    funded_through: Rfc3339Utc,
    budget_version: Int64String,
    machine_id: Type.Optional(Uuid),
    fence: Type.Optional(Int64String),
    rate_micro_per_hour: Type.Optional(MicroAmount),
    accepted_runtime_ms: Type.Optional(Int64String),
    meter_started_at: Type.Optional(Nullable(Rfc3339Utc)),
    last_meter_receipt_at: Type.Optional(Nullable(Rfc3339Utc)),
    stopped_at: Type.Optional(Nullable(Rfc3339Utc)),
    tier: Type.Optional(Type.Union([Type.Literal('container'), Type.Literal('inference')])),
    gpu_model: Type.Optional(Type.String()),
    gpu_count: Type.Optional(Type.Integer()),
    template: Type.Optional(JobTemplateSummary),
    job_version: Int64String,
    funded_budget_micro: MicroAmount,
    duration_limit_s: Type.Integer({ minimum: 1 }),
    /** Why the job stopped or failed; null while it has not. */
    close_reason: Nullable(Type.String()),
    created_at: Rfc3339Utc,
  },
  { additionalProperties: false },
);
export type Job = Static<typeof Job>;

/** `GET /api/v1/jobs` query: the caller's jobs, newest first. */
export const JobListQuery = Type.Object({ ...PageQuery.properties, state: Type.Optional(JobState) }, { additionalProperties: false });
export type JobListQuery = Static<typeof JobListQuery>;

export const JobEndpointKind = Type.Union([
  Type.Literal('ssh'),
  Type.Literal('https'),
  Type.Literal('http'),
  Type.Literal('sftp-retrieval'),
]);
export type JobEndpointKind = Static<typeof JobEndpointKind>;

export const JobEndpoint = Type.Object(
  {
    endpoint_id: Type.String(),
    kind: JobEndpointKind,
    external_host: Type.String(),
    external_port: Type.Integer({ minimum: 1, maximum: 65535 }),
  },
  { additionalProperties: false },
);
export type JobEndpoint = Static<typeof JobEndpoint>;

/** Contract part 2, Job access. */
export const JobAccess = Type.Object(
  {
    mode: Type.Union([Type.Literal('execution'), Type.Literal('retrieval-read-only')]),
    endpoints: Type.Array(JobEndpoint),
    ssh_host_key_fingerprint: Type.String(),
    ssh_command: Type.String(),
    expires_at: Rfc3339Utc,
    api_key: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]{43}$' })),
  },
  { additionalProperties: false },
);
export type JobAccess = Static<typeof JobAccess>;

export const JobStopRequest = Type.Object(
  { reason: Type.String({ minLength: 1, maxLength: JOB_LIMITS.stopReasonMaxLength }) },
  { additionalProperties: false },
);
export type JobStopRequest = Static<typeof JobStopRequest>;

export const JobStopResult = Type.Object(
  {
    job_id: Uuid,
    state: Type.Union([Type.Literal('STOPPING'), Type.Literal('STOPPED'), Type.Literal('CLEANING'), Type.Literal('CLOSED')]),
  },
  { additionalProperties: false },
);
export type JobStopResult = Static<typeof JobStopResult>;

export const BudgetExtensionRequest = Type.Object(
  {
    additional_budget_micro: MicroAmount,
    new_duration_limit_s: Type.Integer({ minimum: 1, maximum: JOB_DURATION_LIMIT_MAX_S }),
    expected_job_version: Int64String,
    expected_budget_version: Int64String,
  },
  { additionalProperties: false },
);
export type BudgetExtensionRequest = Static<typeof BudgetExtensionRequest>;

export const BudgetExtensionResult = Type.Object(
  { job_id: Uuid, budget_version: Int64String, funded_budget_micro: MicroAmount },
  { additionalProperties: false },
);
export type BudgetExtensionResult = Static<typeof BudgetExtensionResult>;

/** One sequenced job event (contract part 6: fields not shown). Messages are sanitized and bounded. */
export const JobEvent = Type.Object(
  {
    seq: Type.Integer({ minimum: 1 }),
    at: Rfc3339Utc,
    kind: Type.String(),
    message: Type.String(),
    data: Type.Record(Type.String(), Type.Unknown()),
  },
  { additionalProperties: false },
);
export type JobEvent = Static<typeof JobEvent>;

// ---- job logs (issue 25 item 2) ----

/** Lines a logs request answers when it names no `tail`. */
export const JOB_LOG_TAIL_DEFAULT_LINES = 100;

/** `GET /api/v1/jobs/{id}/logs`: the last `tail` lines, or those after `cursor`; `follow` streams them as Server-Sent Events. */
export const JobLogsQuery = Type.Object(
  {
    tail: Type.Optional(Type.Integer({ minimum: 0, maximum: JOB_LOG_TAIL_MAX_LINES, default: JOB_LOG_TAIL_DEFAULT_LINES })),
    follow: Type.Optional(Type.Boolean({ default: false })),
    cursor: Type.Optional(JobLogCursor),
  },
  { additionalProperties: false },
);
export type JobLogsQuery = Static<typeof JobLogsQuery>;

/** The lines, oldest first, and the cursor to ask for what follows them (null: no line yet and none given). */
export const JobLogs = Type.Object(
  { lines: Type.Array(JobLogLine, { maxItems: JOB_LOG_TAIL_MAX_LINES + 1 }), cursor: Nullable(JobLogCursor) },
  { additionalProperties: false },
);
export type JobLogs = Static<typeof JobLogs>;
// ---- end of job logs ----
