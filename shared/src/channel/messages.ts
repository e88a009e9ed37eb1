import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { ByteCount, COUNTER_MAX, ImageDigest, Int64String, Rfc3339Utc, Uuid } from '../formats.js';
import { JobLimits } from './manifest.js';
import { HARDWARE_RECEIPT_MAX_BYTES } from './receipts.js';
import { RELAY_BODY_MAX_BYTES } from '../limits.js';

/**
 * The agent channel, protocol version 1 (DESIGN.md "The agent channel").
 *
 * Wire: every WebSocket text message is a Frame `{p, s}`: `p` is the payload JSON string and `s` the base64
 * ed25519 signature of the exact UTF-8 bytes of `p`, by the sender (the control plane's key, or the machine's).
 *
 * Every payload carries `v` (protocol version), `t` (type), `sid` (the connection's session id, which the
 * control plane's first frame announces, so a frame recorded on one connection is worthless on another) and
 * `seq` (per connection and direction, starting at 1, each frame exactly one more than the last: a duplicate,
 * gap or reordering closes the connection).
 *
 * Reliable messages (telemetry, receipts, job status) carry `id`: a per-machine counter the agent persists; the
 * control plane applies an id once (it remembers the highest applied id per machine in the same transaction as
 * the effect) and acknowledges cumulatively with `ack.upto`. Commands carry `command_seq`, a per-machine counter
 * of the outbox; the agent applies each once and acknowledges cumulatively with `command_ack.upto`. After a
 * reconnect both sides resend everything not yet acknowledged, in order.
 *
 * Each message type is listed once, in catalog.ts (schema, direction, reliable or not); the unions of each side's
 * messages and the reliable set are derived from there, not written here.
 */

export const CHANNEL_PROTOCOL_VERSION = 1;
/** Frames above this size close the connection. Telemetry batches are sized to stay far below it. */
export const CHANNEL_MAX_FRAME_BYTES = 256 * 1024;
export const TELEMETRY_BATCH_MAX_SAMPLES = 60;
export const CHANNEL_PATH = '/api/v1/agents/channel';

export const Frame = Type.Object(
  { p: Type.String({ maxLength: CHANNEL_MAX_FRAME_BYTES }), s: Type.String({ maxLength: 128 }) },
  { additionalProperties: false },
);
export type Frame = Static<typeof Frame>;

/** A counter that ends up in a 64-bit column: bounded, so a peer's 1e300 is refused at the codec, not by the store. */
const Counter = (minimum: number) => Type.Integer({ minimum, maximum: COUNTER_MAX });

const base = <T extends string>(t: T) => ({
  v: Type.Literal(CHANNEL_PROTOCOL_VERSION),
  t: Type.Literal(t),
  sid: Type.String({ minLength: 1, maxLength: 64 }),
  seq: Counter(1),
});

/** Per-machine reliable message id, persisted by the agent; starts at 1. */
const MessageId = Counter(1);

// ---- control plane -> agent ----

/** First frame of a connection, signed by the control plane. `sid` is the session id of this connection. */
export const ChallengeMessage = Type.Object(
  { ...base('challenge'), challenge: Type.String({ minLength: 32, maxLength: 128 }), server_time: Rfc3339Utc },
  { additionalProperties: false },
);
export type ChallengeMessage = Static<typeof ChallengeMessage>;

export const WelcomeMessage = Type.Object(
  {
    ...base('welcome'),
    machine_id: Uuid,
    /** Highest agent message id the control plane has applied: the agent drops these from its queue and resends the rest. */
    acked_upto: Counter(0),
    heartbeat_interval_s: Type.Integer({ minimum: 1 }),
    telemetry_interval_s: Type.Integer({ minimum: 1 }),
    server_time: Rfc3339Utc,
  },
  { additionalProperties: false },
);
export type WelcomeMessage = Static<typeof WelcomeMessage>;

export const AckMessage = Type.Object({ ...base('ack'), upto: Counter(0) }, { additionalProperties: false });
export type AckMessage = Static<typeof AckMessage>;

export const LaunchJobBody = Type.Object(
  {
    job_id: Uuid,
    fence: Int64String,
    image_digest: ImageDigest,
    /** PCI addresses of the GPUs assigned; empty for no GPU. */
    gpu_pci_addresses: Type.Array(Type.String({ maxLength: 32 }), { maxItems: 64 }),
    env: Type.Record(Type.String({ maxLength: 256 }), Type.String({ maxLength: 8192 })),
    command: Type.Optional(Type.Array(Type.String({ maxLength: 4096 }), { maxItems: 256 })),
    /** Container ports to publish (the template's), e.g. 8080. */
    ports: Type.Array(
      Type.Object({
        container_port: Type.Integer({ minimum: 1, maximum: 65535 }),
        protocol: Type.Union([Type.Literal('http'), Type.Literal('https'), Type.Literal('tcp')]),
      }),
      { maxItems: 32 },
    ),
    ssh_public_keys: Type.Array(Type.String({ maxLength: 16384 }), { maxItems: 32 }),
    health_check: Type.Optional(
      Type.Object(
        { port: Type.Integer({ minimum: 1, maximum: 65535 }), path: Type.Optional(Type.String({ maxLength: 1024 })) },
        { additionalProperties: false },
      ),
    ),
    /** Model-kind templates: the per-job engine key (43 chars). */
    engine_api_key: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]{43}$' })),
    meter_interval_s: Type.Integer({ minimum: 1 }),
    /**
     * The container's CPU, memory and process limits, as the machine's manifest announced them (the agent never
     * applies more than its own reserve leaves). Sent only to an agent whose manifest has `job_limits`; its presence
     * tells the agent that this control plane takes `job_event` messages.
     */
    limits: Type.Optional(JobLimits),
    /** The offer's included disk (the job's volume and writable layer together); absent: none enforced. */
    included_disk_bytes: Type.Optional(ByteCount),
    /** The offer's included egress (bytes the container sends out of its network interfaces); absent: none enforced. */
    included_egress_bytes: Type.Optional(ByteCount),
  },
  { additionalProperties: false },
);
export type LaunchJobBody = Static<typeof LaunchJobBody>;

export const StopJobBody = Type.Object(
  { job_id: Uuid, fence: Int64String, reason: Type.String({ maxLength: 500 }), retrieval_window_s: Type.Integer({ minimum: 0 }) },
  { additionalProperties: false },
);
export type StopJobBody = Static<typeof StopJobBody>;

export const CleanJobBody = Type.Object({ job_id: Uuid, fence: Int64String }, { additionalProperties: false });
export type CleanJobBody = Static<typeof CleanJobBody>;

export const RunNettestBody = Type.Object(
  {
    /** Base URL of the measurement endpoint (the control plane serves one by default). */
    endpoint: Type.String({ maxLength: 2048 }),
    /** Hard bound on the whole measurement. */
    timeout_ms: Type.Integer({ minimum: 1000, maximum: 30_000 }),
    download_bytes: Type.Integer({ minimum: 1, maximum: 1_073_741_824 }),
    upload_bytes: Type.Integer({ minimum: 1, maximum: 1_073_741_824 }),
  },
  { additionalProperties: false },
);
export type RunNettestBody = Static<typeof RunNettestBody>;

export const UpdateGoLiveBody = Type.Object({ go_live: Type.Boolean() }, { additionalProperties: false });
export type UpdateGoLiveBody = Static<typeof UpdateGoLiveBody>;

export const RotateKeyBody = Type.Object({ reason: Type.String({ maxLength: 500 }) }, { additionalProperties: false });
export type RotateKeyBody = Static<typeof RotateKeyBody>;

/**
 * Control plane -> agent: run the self-test now (at enrollment, daily, or when an operator asks) and answer with a
 * hardware_receipt naming this command. The agent bounds the whole run by `timeout_ms`; past it, the receipt says
 * failed.
 */
export const RunSelftestBody = Type.Object(
  {
    trigger: Type.Union([Type.Literal('enrollment'), Type.Literal('daily'), Type.Literal('command')]),
    timeout_ms: Type.Integer({ minimum: 10_000, maximum: 30 * 60_000 }),
    /** The benchmark image to run, by digest; the agent never runs one that is not this digest. */
    benchmark_image: Type.Optional(ImageDigest),
  },
  { additionalProperties: false },
);
export type RunSelftestBody = Static<typeof RunSelftestBody>;

const command = <K extends string, B extends TSchema>(kind: K, body: B) =>
  Type.Object(
    { ...base('command'), command_seq: Counter(1), command_id: Uuid, kind: Type.Literal(kind), body },
    { additionalProperties: false },
  );

export const CommandMessage = Type.Union([
  command('launch_job', LaunchJobBody),
  command('stop_job', StopJobBody),
  command('clean_job', CleanJobBody),
  command('run_nettest', RunNettestBody),
  command('update_go_live', UpdateGoLiveBody),
  command('rotate_key', RotateKeyBody),
  command('run_selftest', RunSelftestBody),
]);
export type CommandMessage = Static<typeof CommandMessage>;
export type CommandKind = CommandMessage['kind'];

// ---- the OpenAI-compatible relay's tunnel (unreliable: never queued, never resent; a lost connection ends the stream) ----

/** Largest engine body piece per relay_data frame (bytes, before base64): well under CHANNEL_MAX_FRAME_BYTES. */
export const RELAY_CHUNK_MAX_BYTES = 64 * 1024;
export { RELAY_BODY_MAX_BYTES };
/** The engine paths the relay may ask for. */
export const RELAY_ENGINE_PATHS = ['/v1/chat/completions', '/v1/completions', '/v1/models'] as const;

const StreamId = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' });

/** Control plane -> agent: open one request to the engine of a running model job; the agent adds the job's key. */
export const RelayOpenMessage = Type.Object(
  {
    ...base('relay_open'),
    stream_id: StreamId,
    job_id: Uuid,
    fence: Int64String,
    method: Type.Union([Type.Literal('GET'), Type.Literal('POST')]),
    path: Type.Union(RELAY_ENGINE_PATHS.map((p) => Type.Literal(p))),
    /** The request body, base64; absent for GET. */
    body: Type.Optional(Type.String({ maxLength: Math.ceil((RELAY_BODY_MAX_BYTES * 4) / 3) + 4 })),
    /** How long the agent waits for the engine's answer to begin. */
    first_byte_timeout_ms: Type.Integer({ minimum: 1, maximum: 3_600_000 }),
    /** How long the whole answer may take. */
    total_timeout_ms: Type.Integer({ minimum: 1, maximum: 86_400_000 }),
  },
  { additionalProperties: false },
);
export type RelayOpenMessage = Static<typeof RelayOpenMessage>;

/** Control plane -> agent: the client went away (or a limit passed); abort the engine request. */
export const RelayCancelMessage = Type.Object({ ...base('relay_cancel'), stream_id: StreamId }, { additionalProperties: false });
export type RelayCancelMessage = Static<typeof RelayCancelMessage>;

// ---- agent -> control plane ----

export const HelloMessage = Type.Object(
  {
    ...base('hello'),
    machine_id: Uuid,
    /** The challenge of this connection, echoed and signed: proves key possession now, not a replay. */
    challenge: Type.String({ minLength: 32, maxLength: 128 }),
    agent_time: Rfc3339Utc,
    agent_version: Type.String({ maxLength: 64 }),
    /** Highest command_seq the agent has applied; the control plane resends what follows. */
    commands_applied_upto: Counter(0),
  },
  { additionalProperties: false },
);
export type HelloMessage = Static<typeof HelloMessage>;

export const HeartbeatMessage = Type.Object(
  {
    ...base('heartbeat'),
    at: Rfc3339Utc,
    uptime_s: Counter(0),
    /** The agent's own health verdict: docker reachable, disk not full, collectors alive. */
    healthy: Type.Boolean(),
    problems: Type.Array(Type.String({ maxLength: 200 }), { maxItems: 16 }),
    running_jobs: Type.Array(
      Type.Object({ job_id: Uuid, fence: Int64String, container_state: Type.String({ maxLength: 32 }) }, { additionalProperties: false }),
      { maxItems: 64 },
    ),
  },
  { additionalProperties: false },
);
export type HeartbeatMessage = Static<typeof HeartbeatMessage>;

const Summary = Type.Optional(Type.Number());
export const GpuReading = Type.Object(
  {
    pci_address: Type.String({ maxLength: 32 }),
    temperature_c: Summary,
    utilization_pct: Summary,
    power_watts: Summary,
    fan_pct: Summary,
    memory_used_bytes: Summary,
    unified_memory_used_bytes: Summary,
  },
  { additionalProperties: false },
);
export type GpuReading = Static<typeof GpuReading>;

export const HostReading = Type.Object(
  { cpu_utilization_pct: Summary, load1: Summary, memory_used_bytes: Summary, disk_free_bytes: Summary, uptime_s: Summary },
  { additionalProperties: false },
);
export type HostReading = Static<typeof HostReading>;

export const TelemetrySample = Type.Object(
  { at: Rfc3339Utc, host: Type.Optional(HostReading), devices: Type.Array(GpuReading, { maxItems: 64 }) },
  { additionalProperties: false },
);
export type TelemetrySample = Static<typeof TelemetrySample>;

export const TelemetryMessage = Type.Object(
  { ...base('telemetry'), id: MessageId, samples: Type.Array(TelemetrySample, { minItems: 1, maxItems: TELEMETRY_BATCH_MAX_SAMPLES }) },
  { additionalProperties: false },
);
export type TelemetryMessage = Static<typeof TelemetryMessage>;

export const MeterReceiptMessage = Type.Object(
  {
    ...base('meter_receipt'),
    id: MessageId,
    job_id: Uuid,
    fence: Int64String,
    /** Per job and fence, from 1, each receipt the next. */
    meter_seq: Counter(1),
    period_start: Rfc3339Utc,
    period_end: Rfc3339Utc,
    runtime_ms: Int64String,
    final: Type.Boolean(),
  },
  { additionalProperties: false },
);
export type MeterReceiptMessage = Static<typeof MeterReceiptMessage>;

export const JobStatusMessage = Type.Object(
  {
    ...base('job_status'),
    id: MessageId,
    job_id: Uuid,
    fence: Int64String,
    status: Type.Union(['accepted', 'pulling', 'starting', 'ready', 'exited', 'stopped', 'cleaned', 'failed'].map((s) => Type.Literal(s))),
    at: Rfc3339Utc,
    detail: Type.Optional(Type.String({ maxLength: 2000 })),
    /** Pull progress, 0..100, with status pulling. */
    progress_pct: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
    /** With status ready: what the agent checked (container running, health port answered, model list). */
    evidence: Type.Optional(
      Type.Record(Type.String({ maxLength: 64 }), Type.Union([Type.String({ maxLength: 2000 }), Type.Number(), Type.Boolean()])),
    ),
    /** With status ready: how the renter reaches the job. */
    access: Type.Optional(
      Type.Object(
        {
          ssh_port: Type.Integer({ minimum: 1, maximum: 65535 }),
          ssh_host_key_fingerprint: Type.String({ maxLength: 200 }),
          /** The address renters reach this machine's ports at, when the agent knows it (else the control plane's configured one). */
          public_host: Type.Optional(Type.String({ minLength: 1, maxLength: 253 })),
          ports: Type.Array(
            Type.Object(
              { container_port: Type.Integer(), host_port: Type.Integer(), protocol: Type.String({ maxLength: 8 }) },
              { additionalProperties: false },
            ),
            { maxItems: 32 },
          ),
        },
        { additionalProperties: false },
      ),
    ),
    exit_code: Type.Optional(Type.Integer()),
  },
  { additionalProperties: false },
);
export type JobStatusMessage = Static<typeof JobStatusMessage>;

/** What the agent saw its confinement do to a job (host-agent/src/jobs/job-confinement.ts). */
export const JOB_EVENT_KINDS = [
  /** The kernel killed a process of the job for going past its memory limit. */
  'oom_kill',
  /** The job holds as many processes as its pids limit allows: more forks fail inside it. */
  'pids_limit_reached',
  'disk_quota_warning',
  /** The job wrote past its included disk: the agent stopped its container. */
  'disk_quota_exceeded',
  'egress_quota_warning',
  /** The job sent past its included egress: the agent stopped its container. */
  'egress_quota_exceeded',
  /** The job has no network interface of its own (host networking), so its egress cannot be counted. */
  'egress_unmetered',
] as const;
export type JobEventKind = (typeof JOB_EVENT_KINDS)[number];

/**
 * Agent -> control plane: something that happened to a running job that is no change of its state, recorded as one
 * of the job's events. Sent only for launches that carried `limits` (a control plane that knows this type).
 */
export const JobEventMessage = Type.Object(
  {
    ...base('job_event'),
    id: MessageId,
    job_id: Uuid,
    fence: Int64String,
    at: Rfc3339Utc,
    kind: Type.Union(JOB_EVENT_KINDS.map((kind) => Type.Literal(kind))),
    message: Type.String({ maxLength: 500 }),
    data: Type.Record(Type.String({ maxLength: 64 }), Type.Union([Type.String({ maxLength: 200 }), Type.Number(), Type.Boolean()]), {
      maxProperties: 16,
    }),
  },
  { additionalProperties: false },
);
export type JobEventMessage = Static<typeof JobEventMessage>;

export const NettestReceiptMessage = Type.Object(
  {
    ...base('nettest_receipt'),
    id: MessageId,
    command_id: Uuid,
    measured_at: Rfc3339Utc,
    duration_ms: Counter(0),
    download_mbps: Type.Optional(Type.Number({ minimum: 0 })),
    upload_mbps: Type.Optional(Type.Number({ minimum: 0 })),
    latency_ms: Type.Optional(Type.Number({ minimum: 0 })),
    error: Type.Optional(Type.String({ maxLength: 500 })),
  },
  { additionalProperties: false },
);
export type NettestReceiptMessage = Static<typeof NettestReceiptMessage>;

/**
 * Agent -> control plane: a self-test's signed receipt (receipts.ts). The frame's signature proves the sender; the
 * receipt's own signature lets anyone check it later against the machine's public key.
 */
export const HardwareReceiptMessage = Type.Object(
  {
    ...base('hardware_receipt'),
    id: MessageId,
    receipt: Type.String({ minLength: 2, maxLength: HARDWARE_RECEIPT_MAX_BYTES }),
    signature: Type.String({ minLength: 88, maxLength: 88 }),
  },
  { additionalProperties: false },
);
export type HardwareReceiptMessage = Static<typeof HardwareReceiptMessage>;

export const CommandAckMessage = Type.Object({ ...base('command_ack'), upto: Counter(0) }, { additionalProperties: false });
export type CommandAckMessage = Static<typeof CommandAckMessage>;

/** Agent -> control plane: the engine's answer began (status and content type). */
export const RelayHeadMessage = Type.Object(
  {
    ...base('relay_head'),
    stream_id: StreamId,
    status: Type.Integer({ minimum: 100, maximum: 599 }),
    content_type: Type.String({ maxLength: 256 }),
  },
  { additionalProperties: false },
);
export type RelayHeadMessage = Static<typeof RelayHeadMessage>;

/** Agent -> control plane: the next piece of the engine's body, base64, exactly as the engine sent it. */
export const RelayDataMessage = Type.Object(
  { ...base('relay_data'), stream_id: StreamId, data: Type.String({ maxLength: Math.ceil((RELAY_CHUNK_MAX_BYTES * 4) / 3) + 4 }) },
  { additionalProperties: false },
);
export type RelayDataMessage = Static<typeof RelayDataMessage>;

/** Agent -> control plane: the engine's answer ended; `error` when it failed (no answer, a timeout, a cut). */
export const RelayEndMessage = Type.Object(
  {
    ...base('relay_end'),
    stream_id: StreamId,
    error: Type.Optional(
      Type.Union([Type.Literal('unreachable'), Type.Literal('timeout'), Type.Literal('not_running'), Type.Literal('aborted')]),
    ),
    detail: Type.Optional(Type.String({ maxLength: 500 })),
  },
  { additionalProperties: false },
);
export type RelayEndMessage = Static<typeof RelayEndMessage>;

/** The relay tunnel's agent messages: unreliable, handed to the relay hub as they come. */
export type RelayAgentMessage = RelayHeadMessage | RelayDataMessage | RelayEndMessage;

// ---- job logs (issue 25 item 2): on demand, unreliable like the relay's tunnel; a lost connection ends the stream ----

/** Most lines one logs_open asks for before following (the API's `tail` bound). */
export const JOB_LOG_TAIL_MAX_LINES = 1000;
/** Longest line the agent keeps and sends (characters); a longer one is split into pieces of this size. */
export const JOB_LOG_LINE_MAX_CHARS = 8192;
/** Most lines in one logs_data frame; the agent also keeps a frame's text under JOB_LOG_FRAME_MAX_BYTES. */
export const JOB_LOG_FRAME_MAX_LINES = 256;
/** The agent starts a new logs_data frame past this many bytes of text: well under CHANNEL_MAX_FRAME_BYTES. */
export const JOB_LOG_FRAME_MAX_BYTES = 64 * 1024;

/** A log cursor: the line's sequence number in the job's log on its machine, from 1 (decimal). */
export const JobLogCursor = Type.String({ pattern: '^(0|[1-9][0-9]{0,15})$', maxLength: 16 });

/**
 * One line of a job's output: stdout and stderr as the container wrote them (the job's secret values redacted),
 * or `ark` for the agent's own notes in the stream (lines dropped past the rate bound, lines skipped on a resume).
 */
export const JobLogLine = Type.Object(
  {
    cursor: JobLogCursor,
    stream: Type.Union([Type.Literal('stdout'), Type.Literal('stderr'), Type.Literal('ark')]),
    /** When the container wrote it (Docker's timestamp, up to nanoseconds). */
    at: Rfc3339Utc,
    text: Type.String({ maxLength: JOB_LOG_LINE_MAX_CHARS }),
  },
  { additionalProperties: false },
);
export type JobLogLine = Static<typeof JobLogLine>;

/**
 * Control plane -> agent: send a job's log lines on this stream. Without `after`: the last `limit` lines. With it:
 * the lines after that cursor, at most `limit` (the oldest of them; when following, the newest, with an `ark` line
 * saying how many were skipped). With `follow`, new lines go on until logs_cancel, the connection ends or the job's
 * container has ended and every line was sent.
 */
export const LogsOpenMessage = Type.Object(
  {
    ...base('logs_open'),
    stream_id: StreamId,
    job_id: Uuid,
    limit: Type.Integer({ minimum: 0, maximum: JOB_LOG_TAIL_MAX_LINES }),
    after: Type.Optional(JobLogCursor),
    follow: Type.Boolean(),
  },
  { additionalProperties: false },
);
export type LogsOpenMessage = Static<typeof LogsOpenMessage>;

/** Control plane -> agent: the reader went away; stop sending this stream. */
export const LogsCancelMessage = Type.Object({ ...base('logs_cancel'), stream_id: StreamId }, { additionalProperties: false });
export type LogsCancelMessage = Static<typeof LogsCancelMessage>;

/** Agent -> control plane: the next lines of a stream, in cursor order. */
export const LogsDataMessage = Type.Object(
  { ...base('logs_data'), stream_id: StreamId, lines: Type.Array(JobLogLine, { minItems: 1, maxItems: JOB_LOG_FRAME_MAX_LINES }) },
  { additionalProperties: false },
);
export type LogsDataMessage = Static<typeof LogsDataMessage>;

/**
 * Agent -> control plane: the stream ended. Without `error`: every line asked for was sent (and, when following,
 * the container has ended). `not_found`: the job's log is not on this machine (never launched, or cleaned).
 */
export const LogsEndMessage = Type.Object(
  {
    ...base('logs_end'),
    stream_id: StreamId,
    error: Type.Optional(Type.Union([Type.Literal('not_found'), Type.Literal('unavailable'), Type.Literal('aborted')])),
    detail: Type.Optional(Type.String({ maxLength: 500 })),
  },
  { additionalProperties: false },
);
export type LogsEndMessage = Static<typeof LogsEndMessage>;

/** The job-log stream's agent messages: unreliable, handed to the log tunnel as they come. */
export type LogsAgentMessage = LogsDataMessage | LogsEndMessage;
// ---- end of job logs ----
