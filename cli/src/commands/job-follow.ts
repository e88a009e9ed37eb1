// Following a job from the terminal: its event list page by page (`jobs events -f`, and `jobs create` waiting for
// RUNNING) and its output over Server-Sent Events (`jobs logs -f`), each riding out a lost connection or a busy
// server with the same backoff and resuming after the last thing printed.
import type { ApiClient, Page } from '../client.js';
import { ApiError, parseAnswer } from '../client.js';
import type { CommandContext } from '../context.js';
import { CliError, EXIT } from '../exit-codes.js';
import { serverSentEvents } from '../sse.js';

export interface JobEvent {
  seq: number;
  at: string;
  kind: string;
  message: string;
  data: Record<string, unknown>;
}

/** Where a follower of the events stops: the job is over and its last events are written. */
const ENDED = new Set(['CLOSED', 'FAILED']);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Reads the events after `cursor`, every page. */
export async function eventsAfter(
  api: ApiClient,
  jobId: string,
  cursor: string | null,
): Promise<{ items: JobEvent[]; cursor: string | null }> {
  const items: JobEvent[] = [];
  let next = cursor;
  for (;;) {
    const page: Page<JobEvent> = await api.get<Page<JobEvent>>(`/api/v1/jobs/${jobId}/events`, {
      query: { limit: 100, ...(next === null ? {} : { cursor: next }) },
    });
    items.push(...page.items);
    if (page.next_cursor === null) return { items, cursor: next };
    next = page.next_cursor;
    if (page.items.length === 0) return { items, cursor: next };
  }
}

/** An error a follower waits out: the server unreachable, or an answer that says to retry (503, 429). */
function transient(error: unknown): boolean {
  if (error instanceof ApiError) return error.retryable || error.status === 502 || error.status === 503 || error.status === 504;
  return error instanceof CliError && error.exitCode === EXIT.unreachable;
}

/**
 * How a follower (`jobs events -f`, `jobs logs -f`) rides out a lost connection or a 503: it waits 0.5 s, then twice
 * as long each time up to 30 s, and gives up once the server has been failing for `retryForMs`. Says so on stderr.
 */
class Reconnect {
  #failingSince: number | null = null;
  #backoffMs = 0;
  constructor(
    private readonly ctx: CommandContext,
    private readonly retryForMs: number,
  ) {}

  /** A request went through: the next failure starts over. */
  succeeded(): void {
    if (this.#failingSince !== null) this.ctx.out.warn(`reconnected to ${this.ctx.api.baseUrl}; following again`);
    this.#failingSince = null;
    this.#backoffMs = 0;
  }

  /** Waits before the next try, or throws `error` when it is not transient or the failing lasted too long. */
  async failed(error: unknown): Promise<void> {
    if (!transient(error)) throw error;
    this.#failingSince ??= Date.now();
    if (Date.now() - this.#failingSince > this.retryForMs) throw error;
    this.#backoffMs = Math.min(30_000, this.#backoffMs === 0 ? 500 : this.#backoffMs * 2);
    this.ctx.out.warn(`${(error as Error).message}; retrying in ${Math.round(this.#backoffMs / 100) / 10} s`);
    await sleep(this.#backoffMs);
  }
}

/** Follows the event list: answers the events after `seq`; the cursor scheme is opaque, so the seq is what we dedupe on. */
export class EventFollower {
  private cursor: string | null = null;
  private lastSeq = 0;

  constructor(
    private readonly api: ApiClient,
    private readonly jobId: string,
  ) {}

  async poll(): Promise<JobEvent[]> {
    const { items, cursor } = await eventsAfter(this.api, this.jobId, this.cursor);
    this.cursor = cursor;
    const fresh = items.filter((event) => event.seq > this.lastSeq);
    for (const event of fresh) this.lastSeq = Math.max(this.lastSeq, event.seq);
    return fresh;
  }
}

/** One line of a job's output (GET /api/v1/jobs/{id}/logs). */
export interface JobLogLine {
  cursor: string;
  stream: 'stdout' | 'stderr' | 'ark';
  at: string;
  text: string;
}

/** Most lines one request answers (the API's bound on `tail`). */
export const LOG_TAIL_MAX = 1000;

/**
 * Follows a job's output over Server-Sent Events until the container has ended (the `end` event). A lost connection
 * (or a 503 or 429) is retried with backoff for `retryForMs`, resuming after the last line printed: none twice.
 */
export async function followLogs(
  ctx: CommandContext,
  jobId: string,
  tail: number,
  retryForMs: number,
  print: (line: JobLogLine) => void,
): Promise<number | undefined> {
  const controller = new AbortController();
  const interrupt = () => controller.abort();
  process.once('SIGINT', interrupt);
  let cursor: string | undefined;
  const reconnect = new Reconnect(ctx, retryForMs);
  try {
    while (!controller.signal.aborted) {
      try {
        const response = await ctx.api.raw('GET', `/api/v1/jobs/${encodeURIComponent(jobId)}/logs`, {
          // A resume asks for every line missed since the last one printed, up to the bound (the server says how many it skipped past it).
          query: { follow: true, ...(cursor === undefined ? { tail } : { tail: LOG_TAIL_MAX, cursor }) },
          headers: { accept: 'text/event-stream', ...(cursor === undefined ? {} : { 'last-event-id': cursor }) },
          signal: controller.signal,
        });
        if (!response.ok || response.body === null) await parseAnswer(response);
        reconnect.succeeded();
        for await (const event of serverSentEvents(response.body as unknown as AsyncIterable<Uint8Array>)) {
          if (event.event === 'line') {
            const line = JSON.parse(event.data) as JobLogLine;
            print(line);
            cursor = line.cursor;
          } else if (event.event === 'end') {
            return undefined;
          } else if (event.event === 'error') {
            const failure = JSON.parse(event.data) as { code: string; message: string };
            const unavailable = failure.code === 'JOB_LOGS_UNAVAILABLE';
            throw new ApiError(unavailable ? 409 : 503, failure.code, failure.message, !unavailable, null);
          }
        }
        // The stream ended without its `end` event: the connection was cut.
        throw new CliError(EXIT.unreachable, 'UNREACHABLE', `the log stream from ${ctx.api.baseUrl} was cut`);
      } catch (error) {
        if (controller.signal.aborted) break;
        await reconnect.failed(error);
      }
    }
    return EXIT.interrupted;
  } finally {
    process.removeListener('SIGINT', interrupt);
  }
}

/**
 * Follows a job's events until it is CLOSED or FAILED, polling every `intervalMs`. A lost connection (a restarting
 * server, a network blip) is retried with backoff for `retryForMs`; the follower keeps its cursor and the last seq
 * printed, so the stream resumes after the last event shown, none twice.
 */
export async function followEvents(
  ctx: CommandContext,
  follower: EventFollower,
  jobId: string,
  intervalMs: number,
  retryForMs: number,
  print: (event: JobEvent) => void,
): Promise<number | undefined> {
  let stopping = false;
  const interrupt = () => {
    stopping = true;
  };
  process.once('SIGINT', interrupt);
  const reconnect = new Reconnect(ctx, retryForMs);
  try {
    while (!stopping) {
      try {
        for (const event of await follower.poll()) print(event);
        const job = await ctx.api.get<{ state: string }>(`/api/v1/jobs/${encodeURIComponent(jobId)}`);
        reconnect.succeeded();
        if (ENDED.has(job.state)) {
          // One last read: the closing events land with the state.
          for (const event of await follower.poll()) print(event);
          return undefined;
        }
        await sleep(intervalMs);
      } catch (error) {
        await reconnect.failed(error);
      }
    }
    return EXIT.interrupted;
  } finally {
    process.removeListener('SIGINT', interrupt);
  }
}
