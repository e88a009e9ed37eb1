import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { ByteCount, ImageDigest, Int64String, Rfc3339Utc, Uuid } from '../formats.js';
import { base, CHANNEL_MAX_FRAME_BYTES, Counter, MessageId, TELEMETRY_BATCH_MAX_SAMPLES, X25519Key } from './wire.js';
import { JobLimits } from './manifest.js';
import { HARDWARE_RECEIPT_MAX_BYTES } from './receipts.js';

/**
 * The agent channel, protocol version 1 (DESIGN.md "The agent channel").
 *
 * Wire: every WebSocket text message is a Frame `{p, s}`: `p` is the payload JSON string and `s` the base64
 * ed25519 signature of the exact UTF-8 bytes of `p`, by the sender (the control plane's key, or the machine's). On a
 * connection whose handshake agreed MAC keys (an agent asking with `mac=1` on the upgrade URL; session-mac.ts), the
 * types the catalog marks `auth: 'mac'` travel as `{p, m}` instead: `m` the base64 HMAC-SHA256 of `p`'s bytes under
 * the sender's direction key. Agents that do not ask get signatures only, as before.
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

export { CHANNEL_MAX_FRAME_BYTES, CHANNEL_PATH, CHANNEL_PROTOCOL_VERSION, TELEMETRY_BATCH_MAX_SAMPLES } from './wire.js';
export * from './streams.js';

/** A frame on the wire: signed (`s`), or under the connection's MAC (`m`) for the types that allow it. */
export const Frame = Type.Union([
  Type.Object(
    { p: Type.String({ maxLength: CHANNEL_MAX_FRAME_BYTES }), s: Type.String({ maxLength: 128 }) },
    { additionalProperties: false },
  ),
  Type.Object(
    { p: Type.String({ maxLength: CHANNEL_MAX_FRAME_BYTES }), m: Type.String({ maxLength: 44 }) },
    { additionalProperties: false },
  ),
]);
export type Frame = Static<typeof Frame>;

// ---- control plane -> agent ----

/** First frame of a connection, signed by the control plane. `sid` is the session id of this connection. */
export const ChallengeMessage = Type.Object(
  {
    ...base('challenge'),
    challenge: Type.String({ minLength: 32, maxLength: 128 }),
    server_time: Rfc3339Utc,
    /** Only to an agent that asked (`mac=1`): the control plane's ephemeral X25519 key for this connection's MAC keys. */
    kx: Type.Optional(X25519Key),
  },
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
    /** The agent's ephemeral X25519 key, answering the challenge's `kx`: from here on the MAC keys are agreed. */
    kx: Type.Optional(X25519Key),
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
