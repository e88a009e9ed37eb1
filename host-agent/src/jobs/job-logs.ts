// A job's logs (issue 25 item 2): the container's stdout and stderr captured to disk as it writes them, and sent to
// the control plane on demand over the channel, like the relay's tunnel (engine-relay.ts).
//
// Capture: Docker's log follow, demultiplexed frame by frame (an entry is a frame, prefixed with its timestamp);
// each line is redacted (the job's env values and engine key) and split at JOB_LOG_LINE_MAX_CHARS before it is
// written to the job's bounded, rotated file (job-log-file.ts). After a restart the capture re-attaches from the last
// kept timestamp, so what the container wrote meanwhile is taken from Docker's own log and nothing is kept twice.
// The files stay through the retrieval window and go at clean.
//
// Sending: a logs_open is answered from the file (the last `limit` lines, or those after a cursor), then, when
// following, with each new line as it is written, until logs_cancel, the connection's end or the container's end.
// One token bucket per job bounds the bytes its streams push through the channel: the answer to a request waits
// for the bucket (it is paced, never cut), while followed lines past the bound are dropped from the stream (they
// stay on disk) and one `ark` line says how many, with their cursors, once the bucket is half full again.
import {
  type ClockTimer,
  JOB_LOG_FRAME_MAX_BYTES,
  JOB_LOG_FRAME_MAX_LINES,
  JOB_LOG_LINE_MAX_CHARS,
  type JobLogLine,
  type LogsCancelMessage,
  type LogsDataMessage,
  type LogsEndMessage,
  type LogsOpenMessage,
} from '@ark/shared';
import { join } from 'node:path';
import { forEachFrame } from '../runtime/docker-stream.js';
import type { JobContext, LiveJob } from './job-context.js';
import { JobLogFile, type LogStreamName, type StoredLogLine } from './job-log-file.js';
import { errorText, redact } from './text.js';
import { TokenBucket } from './token-bucket.js';

type Body<M> = Omit<M, 'v' | 'sid' | 'seq'>;
export type LogsReply = Body<LogsDataMessage> | Body<LogsEndMessage>;
/** Sends one frame on the current connection; false when there is none (the stream is then abandoned). */
export type LogsSend = (body: LogsReply) => boolean;

/** What a line costs in the bucket beyond its text: the frame's JSON around it. */
const LINE_OVERHEAD_BYTES = 64;
/** Lines a follower keeps while its first answer is still being paced out; more are dropped from its stream. */
const HEARD_MAX_LINES = 5_000;
/** Streams open at once on this machine; more are refused. */
const STREAMS_MAX = 64;
/** While lines are being dropped, how often the stream checks whether the bucket has room for the note again. */
const DROP_NOTE_RETRY_MS = 1_000;
const TIMESTAMP = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?Z$/;

export type JobLogSettings = {
  /** The most bytes one job's log keeps on disk (two rotated halves). */
  maxBytes: number;
  /** The bytes per second one job's log streams may push through the channel. */
  rateBytesPerS: number;
};

type Listener = { lines(lines: StoredLogLine[]): void; ended(): void };

type Capture = { controller: AbortController; running: boolean; listeners: Set<Listener>; retry: ClockTimer | undefined };

/** A capture that failed while the container may still run is tried again after this long. */
const RECAPTURE_DELAY_MS = 5_000;
const RECAPTURE_PHASES: ReadonlySet<string> = new Set(['starting', 'ready', 'stopping']);

type Stream = {
  jobId: string;
  send: LogsSend;
  closed: boolean;
  pending: StoredLogLine[];
  flushQueued: boolean;
  dropped: { count: number; first: number; last: StoredLogLine } | undefined;
  dropTimer: ClockTimer | undefined;
  listener: Listener | undefined;
  wake: AbortController;
};

/** Docker's timestamp in nanoseconds since the epoch; undefined when it is not one. */
export function timestampNanos(timestamp: string): bigint | undefined {
  const match = TIMESTAMP.exec(timestamp);
  if (match === null) return undefined;
  const ms = Date.parse(`${match[1]}Z`);
  if (Number.isNaN(ms)) return undefined;
  return BigInt(ms) * 1_000_000n + BigInt((match[2] ?? '').padEnd(9, '0'));
}

/** Docker's `since` for entries after this timestamp: whole seconds, a point and nine digits. */
export function sinceOf(timestamp: string): string | undefined {
  const nanos = timestampNanos(timestamp);
  if (nanos === undefined) return undefined;
  return `${nanos / 1_000_000_000n}.${(nanos % 1_000_000_000n).toString().padStart(9, '0')}`;
}

/** Splits one log entry (its payload as Docker sent it, timestamps on) into lines: timestamp and text. */
export function entryLines(payload: string, fallbackTimestamp: string): Array<{ t: string; l: string }> {
  const text = payload.endsWith('\n') ? payload.slice(0, -1) : payload;
  const lines: Array<{ t: string; l: string }> = [];
  let timestamp = fallbackTimestamp;
  for (const part of text.split('\n')) {
    const space = part.indexOf(' ');
    const head = space < 0 ? part : part.slice(0, space);
    let body = part;
    if (TIMESTAMP.test(head)) {
      timestamp = head;
      body = space < 0 ? '' : part.slice(space + 1);
    }
    lines.push({ t: timestamp, l: body.endsWith('\r') ? body.slice(0, -1) : body });
  }
  return lines;
}

export class JobLogs {
  readonly #context: JobContext;
  readonly #settings: JobLogSettings;
  readonly #files = new Map<string, Promise<JobLogFile>>();
  readonly #captures = new Map<string, Capture>();
  readonly #buckets = new Map<string, TokenBucket>();
  readonly #streams = new Map<string, Stream>();

  constructor(context: JobContext, settings: JobLogSettings) {
    this.#context = context;
    this.#settings = settings;
  }

  #dirOf(jobId: string): string {
    return join(this.#context.settings.stateDir, 'logs', jobId);
  }

  #file(jobId: string): Promise<JobLogFile> {
    let file = this.#files.get(jobId);
    if (file === undefined) {
      file = JobLogFile.open(this.#dirOf(jobId), this.#settings.maxBytes);
      this.#files.set(jobId, file);
      file.catch(() => this.#files.delete(jobId));
    }
    return file;
  }

  #bucket(jobId: string): TokenBucket {
    let bucket = this.#buckets.get(jobId);
    if (bucket === undefined) {
      const rate = this.#settings.rateBytesPerS;
      // Room for one whole frame at least, so a slow bound still passes long lines.
      bucket = new TokenBucket(rate, Math.max(rate * 4, JOB_LOG_FRAME_MAX_BYTES * 2), this.#context.clock.monotonicMs());
      this.#buckets.set(jobId, bucket);
    }
    return bucket;
  }

  // ---- capture ----

  /** Captures the job's container output from where the kept log ends; a capture already running is left as it is. */
  attach(job: LiveJob): void {
    const record = job.record;
    const containerId = record.container_id;
    if (containerId === undefined || this.#context.lifecycle.closing) return;
    const existing = this.#captures.get(record.job_id);
    if (existing?.running === true) return;
    this.#context.clock.clearTimeout(existing?.retry);
    const launch = record.launch;
    const secrets =
      launch === undefined ? [] : [...(launch.engine_api_key === undefined ? [] : [launch.engine_api_key]), ...Object.values(launch.env)];
    const controller = new AbortController();
    // Registered at once, so a second attach while this one opens the file is a no-op.
    const capture: Capture = { controller, running: true, listeners: existing?.listeners ?? new Set<Listener>(), retry: undefined };
    const listeners = capture.listeners;
    this.#captures.set(record.job_id, capture);
    let failed = false;
    void this.#file(record.job_id)
      .then(async (file) => {
        const after = file.lastTimestamp === undefined ? undefined : timestampNanos(file.lastTimestamp);
        const since = file.lastTimestamp === undefined ? undefined : sinceOf(file.lastTimestamp);
        const source = await this.#context.runtime.followLogs(containerId, {
          ...(since === undefined ? {} : { since }),
          signal: controller.signal,
        });
        await forEachFrame(source, (stream, payload) => {
          const lines: Array<Omit<StoredLogLine, 'n'>> = [];
          for (const entry of entryLines(payload.toString('utf8'), this.#context.clock.now().toISOString())) {
            // Docker's `since` is inclusive and coarse: what the kept log already holds is not kept twice.
            const nanos = timestampNanos(entry.t);
            if (after !== undefined && nanos !== undefined && nanos <= after) continue;
            const text = redact(entry.l, secrets);
            for (let at = 0; at === 0 || at < text.length; at += JOB_LOG_LINE_MAX_CHARS) {
              lines.push({ s: stream, t: entry.t, l: text.slice(at, at + JOB_LOG_LINE_MAX_CHARS) });
            }
          }
          const stored = file.append(lines);
          if (stored.length > 0) for (const listener of listeners) listener.lines(stored);
        });
      })
      .catch((error: unknown) => {
        if (controller.signal.aborted) return;
        failed = true;
        this.#context.logger.warn({ job_id: record.job_id, error: errorText(error) }, 'job log capture failed');
      })
      .finally(() => {
        capture.running = false;
        // Stopped by the agent itself (closing, or the clean) is not the container's end: followers are not told it is.
        if (controller.signal.aborted) return;
        // Docker not answering (restarting, a timeout) while the container still runs: try again from the kept log.
        if (failed && RECAPTURE_PHASES.has(record.phase) && !this.#context.lifecycle.closing) {
          capture.retry = this.#context.clock.setTimeout(() => this.attach(job), RECAPTURE_DELAY_MS);
          capture.retry.unref();
          return;
        }
        for (const listener of listeners) listener.ended();
      });
  }

  /** The job is cleaned: its capture stops, its streams end and its log is removed from disk. */
  async remove(jobId: string): Promise<void> {
    this.#captures.get(jobId)?.controller.abort();
    this.#context.clock.clearTimeout(this.#captures.get(jobId)?.retry);
    this.#captures.delete(jobId);
    this.#buckets.delete(jobId);
    for (const [id, stream] of this.#streams) if (stream.jobId === jobId) this.#end(id, stream, 'not_found', 'the job was cleaned');
    const file = this.#files.get(jobId);
    this.#files.delete(jobId);
    if (file !== undefined) await (await file.catch(() => undefined))?.remove();
    else await (await JobLogFile.open(this.#dirOf(jobId), this.#settings.maxBytes).catch(() => undefined))?.remove();
  }

  /** The supervisor closes: captures stop (a new run re-attaches from the kept log), streams end. */
  close(): void {
    for (const capture of this.#captures.values()) {
      capture.controller.abort();
      this.#context.clock.clearTimeout(capture.retry);
    }
    this.abortStreams();
  }

  /** The connection ended: its streams can no longer be answered. */
  abortStreams(): void {
    for (const [id, stream] of this.#streams) this.#close(id, stream);
  }

  // ---- streams ----

  handle(msg: LogsOpenMessage | LogsCancelMessage, send: LogsSend): void {
    if (msg.t === 'logs_cancel') {
      const stream = this.#streams.get(msg.stream_id);
      if (stream !== undefined) this.#close(msg.stream_id, stream);
      return;
    }
    void this.#open(msg, send).catch((error: unknown) => {
      this.#context.logger.warn({ job_id: msg.job_id, error: errorText(error) }, 'job log stream failed');
      const stream = this.#streams.get(msg.stream_id);
      if (stream !== undefined) this.#end(msg.stream_id, stream, 'unavailable', 'the log could not be read');
    });
  }

  async #open(open: LogsOpenMessage, send: LogsSend): Promise<void> {
    const id = open.stream_id;
    const record = this.#context.jobs.get(open.job_id)?.record;
    if (record === undefined || record.phase === 'cleaning' || record.phase === 'cleaned') {
      send({ t: 'logs_end', stream_id: id, error: 'not_found', detail: 'the job has no log on this machine' });
      return;
    }
    if (this.#streams.has(id)) return;
    if (this.#streams.size >= STREAMS_MAX) {
      send({ t: 'logs_end', stream_id: id, error: 'unavailable', detail: 'too many log streams on this machine' });
      return;
    }
    const stream: Stream = {
      jobId: open.job_id,
      send,
      closed: false,
      pending: [],
      flushQueued: false,
      dropped: undefined,
      dropTimer: undefined,
      listener: undefined,
      wake: new AbortController(),
    };
    this.#streams.set(id, stream);
    const file = await this.#file(open.job_id);
    // Following: listen before reading, so a line written meanwhile is either in the file or heard, never neither.
    const heard: StoredLogLine[] = [];
    let overflow: Stream['dropped'];
    let live = false;
    let ended = false;
    if (open.follow) {
      const capture = this.#captures.get(open.job_id);
      stream.listener = {
        lines: (lines) => {
          if (live) return this.#offer(id, stream, lines);
          // Heard while the answer is still paced out: kept up to a bound, the rest counted as dropped (they stay on disk).
          for (const line of lines) {
            if (heard.length < HEARD_MAX_LINES) heard.push(line);
            else if (overflow === undefined) overflow = { count: 1, first: line.n, last: line };
            else {
              overflow.count += 1;
              overflow.last = line;
            }
          }
        },
        ended: () => {
          ended = true;
          if (live) this.#finishWhenSent(id, stream);
        },
      };
      // A capture waiting to try again counts as live: its container may well still be writing.
      if (capture !== undefined && (capture.running || capture.retry !== undefined)) capture.listeners.add(stream.listener);
      else ended = true;
    }
    const kept = await file.read();
    const backlog = backlogOf(kept, open);
    await this.#sendPaced(id, stream, backlog);
    if (stream.closed) return;
    if (!open.follow) return void this.#end(id, stream);
    const floor = kept.at(-1)?.n ?? 0;
    live = true;
    this.#offer(
      id,
      stream,
      heard.filter((line) => line.n > floor),
    );
    // What did not fit while the answer was paced out comes after the heard lines: one drop note covers both.
    if (overflow !== undefined) {
      const before = stream.dropped;
      stream.dropped = before === undefined ? overflow : { count: before.count + overflow.count, first: before.first, last: overflow.last };
      this.#armDropNote(id, stream);
    }
    if (ended) this.#finishWhenSent(id, stream);
  }

  /** Sends lines in frames, each when the job's bucket has room for it: a request's answer is paced, never cut. */
  async #sendPaced(id: string, stream: Stream, lines: StoredLogLine[]): Promise<void> {
    const { clock } = this.#context;
    const bucket = this.#bucket(stream.jobId);
    for (const frame of framesOf(lines)) {
      const cost = frame.reduce((sum, line) => sum + costOf(line), 0);
      for (;;) {
        if (stream.closed) return;
        const waitMs = bucket.waitMs(cost, clock.monotonicMs());
        if (waitMs === 0 && bucket.take(Math.min(cost, bucket.burst), clock.monotonicMs())) break;
        await clock.sleep(Math.max(waitMs, 1), stream.wake.signal).catch(() => undefined);
      }
      if (!stream.send({ t: 'logs_data', stream_id: id, lines: frame.map(wireLine) })) return void this.#close(id, stream);
    }
  }

  /** Followed lines: each goes out when the bucket has room, else it is dropped from the stream (it stays on disk). */
  #offer(id: string, stream: Stream, lines: StoredLogLine[]): void {
    if (stream.closed || lines.length === 0) return;
    const bucket = this.#bucket(stream.jobId);
    const nowMs = this.#context.clock.monotonicMs();
    for (const line of lines) {
      // The note goes first, and only with room for the line after it: one note per run of dropped lines.
      if (stream.dropped !== undefined && !this.#noteDropped(stream, nowMs, costOf(line))) {
        stream.dropped.count += 1;
        stream.dropped.last = line;
        continue;
      }
      if (bucket.take(costOf(line), nowMs)) stream.pending.push(line);
      else {
        stream.dropped = { count: 1, first: line.n, last: line };
        this.#armDropNote(id, stream);
      }
    }
    this.#queueFlush(id, stream);
  }

  /**
   * Puts the "N lines dropped" note in the stream when the bucket has room for it and `thenBytes` more; true when it
   * did (or none was due).
   */
  #noteDropped(stream: Stream, nowMs: number, thenBytes = 0): boolean {
    const dropped = stream.dropped;
    if (dropped === undefined) return true;
    const note: StoredLogLine = {
      n: dropped.last.n,
      s: 'ark',
      t: dropped.last.t,
      l:
        `${dropped.count} line${dropped.count === 1 ? '' : 's'} dropped (cursors ${dropped.first} to ${dropped.last.n}): the job wrote ` +
        `faster than its log bound of ${this.#settings.rateBytesPerS} bytes/s through the channel; they are kept on the machine, ` +
        `ask for them with cursor=${dropped.first - 1}`,
    };
    // Not before the bucket is half full again: a job that keeps writing past the bound gets one note every few
    // seconds, not one between every two lines that squeeze through.
    const bucket = this.#bucket(stream.jobId);
    if (bucket.waitMs(Math.max(costOf(note) + thenBytes, bucket.burst / 2), nowMs) > 0 || !bucket.take(costOf(note), nowMs)) return false;
    stream.pending.push(note);
    stream.dropped = undefined;
    return true;
  }

  #armDropNote(id: string, stream: Stream): void {
    if (stream.dropTimer !== undefined) return;
    const { clock } = this.#context;
    stream.dropTimer = clock.setTimeout(() => {
      stream.dropTimer = undefined;
      if (stream.closed || stream.dropped === undefined) return;
      if (this.#noteDropped(stream, clock.monotonicMs())) this.#queueFlush(id, stream);
      else this.#armDropNote(id, stream);
    }, DROP_NOTE_RETRY_MS);
    stream.dropTimer.unref();
  }

  /** Lines offered in the same turn of the event loop go out together at its end. */
  #queueFlush(id: string, stream: Stream): void {
    if (stream.flushQueued || stream.pending.length === 0) return;
    stream.flushQueued = true;
    setImmediate(() => {
      stream.flushQueued = false;
      this.#flush(id, stream);
    });
  }

  #flush(id: string, stream: Stream): void {
    if (stream.closed) return;
    for (const frame of framesOf(stream.pending.splice(0))) {
      if (!stream.send({ t: 'logs_data', stream_id: id, lines: frame.map(wireLine) })) return void this.#close(id, stream);
    }
  }

  /** The container ended: once what is pending (and the drop note) went out, the stream ends. */
  #finishWhenSent(id: string, stream: Stream): void {
    const finish = () => {
      if (stream.closed) return;
      if (stream.dropped !== undefined && !this.#noteDropped(stream, this.#context.clock.monotonicMs())) {
        void this.#context.clock.sleep(DROP_NOTE_RETRY_MS, stream.wake.signal).then(finish, () => undefined);
        return;
      }
      this.#flush(id, stream);
      this.#end(id, stream);
    };
    setImmediate(finish);
  }

  #end(id: string, stream: Stream, error?: LogsEndMessage['error'], detail?: string): void {
    if (stream.closed) return;
    stream.send({ t: 'logs_end', stream_id: id, ...(error === undefined ? {} : { error }), ...(detail === undefined ? {} : { detail }) });
    this.#close(id, stream);
  }

  #close(id: string, stream: Stream): void {
    stream.closed = true;
    stream.wake.abort();
    this.#context.clock.clearTimeout(stream.dropTimer);
    if (stream.listener !== undefined) this.#captures.get(stream.jobId)?.listeners.delete(stream.listener);
    this.#streams.delete(id);
  }
}

/** What a logs_open answers from the kept lines before following (LogsOpenMessage says which). */
export function backlogOf(kept: StoredLogLine[], open: Pick<LogsOpenMessage, 'limit' | 'after' | 'follow'>): StoredLogLine[] {
  if (open.after === undefined) return open.limit === 0 ? [] : kept.slice(-open.limit);
  const after = Number(open.after);
  const lines = kept.filter((line) => line.n > after);
  if (lines.length <= open.limit) return lines;
  if (!open.follow) return lines.slice(0, open.limit);
  const skipped = lines.slice(0, lines.length - open.limit);
  const last = skipped.at(-1) as StoredLogLine;
  const note: StoredLogLine = {
    n: last.n,
    s: 'ark',
    t: last.t,
    l: `${skipped.length} line${skipped.length === 1 ? '' : 's'} skipped (cursors ${after + 1} to ${last.n}): more than ${open.limit} were written since the cursor`,
  };
  return open.limit === 0 ? [note] : [note, ...lines.slice(-open.limit)];
}

/** The line's text as it travels: JSON-escaped (a control character takes six bytes), UTF-8. */
function wireBytesOf(line: StoredLogLine): number {
  return Buffer.byteLength(JSON.stringify(line.l));
}

function costOf(line: StoredLogLine): number {
  return wireBytesOf(line) + LINE_OVERHEAD_BYTES;
}

function wireLine(line: StoredLogLine): JobLogLine {
  return { cursor: String(line.n), stream: line.s satisfies LogStreamName, at: line.t, text: line.l };
}

/** Frames of at most JOB_LOG_FRAME_MAX_LINES lines and about JOB_LOG_FRAME_MAX_BYTES of text. */
function framesOf(lines: StoredLogLine[]): StoredLogLine[][] {
  const frames: StoredLogLine[][] = [];
  let frame: StoredLogLine[] = [];
  let bytes = 0;
  for (const line of lines) {
    const size = wireBytesOf(line);
    if (frame.length > 0 && (frame.length >= JOB_LOG_FRAME_MAX_LINES || bytes + size > JOB_LOG_FRAME_MAX_BYTES)) {
      frames.push(frame);
      frame = [];
      bytes = 0;
    }
    frame.push(line);
    bytes += size;
  }
  if (frame.length > 0) frames.push(frame);
  return frames;
}
