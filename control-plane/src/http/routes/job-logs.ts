import { PassThrough } from 'node:stream';
import { IdParams, JOB_LOG_TAIL_DEFAULT_LINES, JobLogCursor, type JobLogLine, JobLogs, JobLogsQuery } from '@ark/shared';
import { Value } from '@sinclair/typebox/value';
import { DomainError } from '../../errors.js';
import { JobLogReader, logsError } from '../../logs/job-logs.js';
import type { LogTunnel } from '../../logs/tunnel.js';
import { principalOf } from '../auth.js';
import type { AppContext } from '../context.js';
import { forwardToHolder } from '../forward-to-holder.js';
import { withErrors } from '../schemas.js';
import type { TypedApp } from '../typed-app.js';

// A job's logs (issue 25 item 2): the lines its container wrote, from its machine through the agent channel. One-off
// reads answer JSON; `follow` answers Server-Sent Events, one event per line with the line's cursor as its id, so a
// client that reconnects with Last-Event-ID resumes after the last line it got.

/** Marks a request one replica forwarded to the one holding the machine's channel: it is never forwarded again. */
export const LOGS_HOP_HEADER = 'x-ark-logs-hop';
/** A comment line this often keeps proxies from closing a quiet stream. */
const KEEP_ALIVE_MS = 15_000;
/** A reader this far behind is cut (it resumes from its cursor): the agent's rate bound is no bound on a stalled client. */
const SLOW_READER_BYTES = 1024 * 1024;

const DESCRIPTION =
  "Renter owner only (anyone else: 404). The lines the job's container wrote to stdout and stderr, oldest first, with the job's secret " +
  "values (its environment and engine key) redacted by the agent; `ark` lines are the platform's notes in the stream. `tail` (default 100, " +
  'at most 1000): the last lines, or with `cursor` the lines after it. `follow=true` answers text/event-stream: the same lines, then each ' +
  'new one as the container writes it (event `line`, id = cursor; a reconnect with Last-Event-ID or `cursor` resumes after it, with an ' +
  '`ark` line when more than `tail` lines were skipped), then event `end` when the container has ended, or `error` with the code. ' +
  'Logs are kept on the machine (a bounded, rotated file per job) while the job runs and through its retrieval window: any other state is ' +
  "409 JOB_LOGS_UNAVAILABLE; a machine that cannot be reached 503 JOB_LOGS_UNREACHABLE. One job's lines pass the channel at a bounded " +
  "rate (the agent's job_log_rate_bytes_per_s): a one-off read is paced, never cut; followed lines past it are dropped from the stream " +
  '(they stay on the machine) and one `ark` line says how many, with their cursors.';

/** One line as an event. */
function eventOf(line: JobLogLine): string {
  return `id: ${line.cursor}\nevent: line\ndata: ${JSON.stringify(line)}\n\n`;
}

export function registerJobLogRoutes(
  app: TypedApp,
  ctx: AppContext,
  tunnel: LogTunnel,
  /** Whether this replica holds the machine's channel now. */
  connectedHere: (machineId: string) => boolean,
): void {
  const reader = new JobLogReader(tunnel, ctx.clock);
  const jobs = ctx.services.jobs;
  const replicas = ctx.services.hosting.replicas;
  const { clock } = ctx;

  app.get(
    '/api/v1/jobs/:id/logs',
    {
      config: { auth: { scope: 'renter' } },
      schema: {
        tags: ['jobs'],
        summary: "A job's logs: the last lines, or follow them as Server-Sent Events",
        description: DESCRIPTION,
        params: IdParams,
        querystring: JobLogsQuery,
        response: withErrors({ 200: JobLogs }, 404, 409, 503),
      },
    },
    async (request: any, reply: any) => {
      const principal = principalOf(request);
      const job = await jobs.reads.find(request.params.id);
      // Owner only: another renter and an operator alike get 404, as for the job's access.
      if (job === null || job.accountId !== principal.accountId) throw new DomainError('NOT_FOUND');
      JobLogReader.assertReadable(job, clock.now());
      if (!connectedHere(job.machineId) && request.headers[LOGS_HOP_HEADER] === undefined) {
        const holder = await replicas.elsewhere(job.machineId);
        if (holder !== null)
          return forwardToHolder(holder, request, reply, {
            hopHeader: LOGS_HOP_HEADER,
            unreachable: 'JOB_LOGS_UNREACHABLE',
            cacheControl: 'no-store',
          });
      }
      const limit: number = request.query.tail ?? JOB_LOG_TAIL_DEFAULT_LINES;
      const follow: boolean = request.query.follow === true;
      // An SSE client's reconnect says where it was in Last-Event-ID; a cursor it names itself goes second.
      const lastEventId = request.headers['last-event-id'];
      const resume = typeof lastEventId === 'string' && Value.Check(JobLogCursor, lastEventId) ? lastEventId : undefined;
      const after: string | undefined = resume ?? request.query.cursor;
      const query = { limit, ...(after === undefined ? {} : { after }) };
      reply.header('cache-control', 'no-store');
      if (!follow) return reader.read(job, query);

      const body = new PassThrough();
      body.on('error', () => {});
      let started = false;
      let failedEarly: DomainError | undefined;
      const keepAlive = clock.setInterval(() => body.write(': keep-alive\n\n'), KEEP_ALIVE_MS);
      keepAlive.unref();
      const finish = (tail: string) => {
        clock.clearInterval(keepAlive);
        if (!body.writableEnded) body.end(tail);
      };
      const stream = reader.follow(job, query, {
        lines: (lines) => {
          if (body.writableEnded) return;
          body.write(lines.map(eventOf).join(''));
          if (body.writableLength > SLOW_READER_BYTES) {
            stream.cancel();
            finish(
              `event: error\ndata: ${JSON.stringify({ code: 'UNAVAILABLE', message: 'The reader fell too far behind; resume from its cursor.' })}\n\n`,
            );
          }
        },
        ended: (failure) => {
          if (failure === undefined) return finish('event: end\ndata: {}\n\n');
          const error = logsError(failure.reason, failure.detail);
          if (!started) failedEarly = error;
          finish(`event: error\ndata: ${JSON.stringify({ code: error.code, message: error.message })}\n\n`);
        },
      });
      // The machine is not connected here at all: an ordinary error answer, not an empty stream.
      if (failedEarly !== undefined) {
        clock.clearInterval(keepAlive);
        throw failedEarly;
      }
      started = true;
      reply.raw.once('close', () => {
        clock.clearInterval(keepAlive);
        if (!body.writableEnded) stream.cancel();
      });
      // A first comment sends the headers at once: a client waiting for lines knows the stream is open.
      body.write(': following\n\n');
      // Nothing between here and the client may hold lines back or compress them.
      reply.code(200).type('text/event-stream').header('x-accel-buffering', 'no').header('content-encoding', 'identity');
      return reply.send(body);
    },
  );
}
