import { type Static, Type } from '@sinclair/typebox';
import { Int64String, Rfc3339Utc, Uuid } from '../formats.js';
import { RELAY_BODY_MAX_BYTES } from '../limits.js';
import { base, StreamId } from './wire.js';

// The channel's streams (messages.ts describes the wire): the OpenAI-compatible relay's tunnel and job logs. Both
// are unreliable, consumed by the gateway itself, and travel under the connection's MAC where one was agreed.

// ---- the OpenAI-compatible relay's tunnel (unreliable: never queued, never resent; a lost connection ends the stream) ----

/** Largest engine body piece per relay_data frame (bytes, before base64): well under CHANNEL_MAX_FRAME_BYTES. */
export const RELAY_CHUNK_MAX_BYTES = 64 * 1024;
export { RELAY_BODY_MAX_BYTES };
/** The engine paths the relay may ask for. */
export const RELAY_ENGINE_PATHS = ['/v1/chat/completions', '/v1/completions', '/v1/models'] as const;

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
