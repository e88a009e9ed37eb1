import { Readable } from 'node:stream';
import {
  IdempotencyHeaders,
  IdParams,
  NETTEST_MAX_BYTES,
  NettestDownloadQuery,
  NettestPing,
  NettestQueued,
  NettestUploadResult,
} from '@ark/shared';
import type { FastifyRequest } from 'fastify';
import type { AppContext } from '../context.js';
import { DomainError } from '../../errors.js';
import type { QueuedCommand } from '../../services/hosting/index.js';
import { nettestQueuedView } from '../../views/machines.js';
import type { Principal } from '../../domain/accounts/principal.js';
import { principalOf } from '../auth.js';
import { answerInTransaction } from '../idempotency.js';
import { withErrors } from '../schemas.js';
import type { TypedApp } from '../typed-app.js';

/**
 * Per address and minute. A measurement is up to ~20 pings, one download and one upload; several rigs behind one
 * NAT may measure at once. Transfers are limited harder: each may move 100 MB.
 */
const PINGS_PER_MIN = 300;
const TRANSFERS_PER_MIN = 20;
const CHUNK = Buffer.alloc(64 * 1024);

/** Admins act on any machine, signed in with a session (as assertOwnerOrAdmin judges). */
const isAdmin = (p: Principal): boolean => p.role === 'admin' && p.authMethod === 'session';

/** What the octet-stream parser produces; a JSON body can never pass for it. */
class UploadCount {
  constructor(readonly bytes: number) {}
}

/** `total` zero bytes, produced as the client reads them (nothing is buffered beyond one chunk). */
function zeroBytes(total: number): Readable {
  let left = total;
  return new Readable({
    read() {
      if (left <= 0) {
        this.push(null);
        return;
      }
      const n = Math.min(left, CHUNK.length);
      left -= n;
      this.push(n === CHUNK.length ? CHUNK : CHUNK.subarray(0, n));
    },
  });
}

export async function registerNettestRoutes(app: TypedApp, ctx: AppContext): Promise<void> {
  const { clock } = ctx;
  const hosting = ctx.services.hosting;

  app.post(
    '/api/v1/hosts/machines/:id/nettest',
    {
      config: { auth: { scope: 'host', owner: 'machine' }, idempotent: true },
      schema: {
        summary: 'Queue a network measurement',
        description:
          'Host owner or admin; no body. Queues a run_nettest command; the agent measures download and upload Mbps and latency from the host ' +
          "network namespace against the configured endpoint, bounded to 30 s, and its receipt updates the machine's network facts.",
        params: IdParams,
        headers: IdempotencyHeaders,
        response: withErrors({ 202: NettestQueued }, 404, 409),
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const toBody = (queued: QueuedCommand) => nettestQueuedView(request.params.id, queued);
      const queued = await hosting.queueNettest(
        { accountId: principal.accountId, admin: isAdmin(principal) },
        request.params.id,
        answerInTransaction(request, reply, 202, toBody),
      );
      return reply.code(202).send(toBody(queued));
    },
  );

  // The measurement endpoints agents measure against: public, rate limited per address before any byte is read.
  const limited = (kind: string, max: number) => async (request: FastifyRequest) => {
    if (!(await ctx.rateLimiter.consume(`nettest-${kind}:${request.ip}`, max, 60_000, clock.now()))) throw new DomainError('UNAVAILABLE');
  };
  const limitPings = limited('ping', PINGS_PER_MIN);
  const limitTransfers = limited('transfer', TRANSFERS_PER_MIN);

  app.get(
    '/api/v1/nettest/ping',
    {
      config: { auth: 'public', cache: 'public' },
      onRequest: limitPings,
      schema: { summary: 'Network test: latency probe', response: withErrors({ 200: NettestPing }) },
    },
    async () => ({ pong: true as const, server_time: clock.now().toISOString() }),
  );

  app.get(
    '/api/v1/nettest/download',
    {
      config: { auth: 'public', cache: 'public' },
      onRequest: limitTransfers,
      schema: {
        summary: 'Network test: download',
        description: `Streams \`bytes\` zero bytes (application/octet-stream), at most ${NETTEST_MAX_BYTES}.`,
        querystring: NettestDownloadQuery,
        response: withErrors({}),
      },
    },
    async (request, reply) => {
      reply.type('application/octet-stream').header('content-length', String(request.query.bytes));
      return reply.send(zeroBytes(request.query.bytes));
    },
  );

  // The raw-body parser lives in its own scope, so no other route accepts octet-stream bodies.
  await app.register(async (scope) => {
    scope.addContentTypeParser('application/octet-stream', (request, payload, done) => {
      const declared = Number(request.headers['content-length'] ?? 0);
      if (declared > NETTEST_MAX_BYTES) {
        done(new DomainError('BODY_TOO_LARGE', `An upload carries at most ${NETTEST_MAX_BYTES} bytes.`), undefined);
        return;
      }
      let bytes = 0;
      let settled = false;
      payload.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes > NETTEST_MAX_BYTES && !settled) {
          settled = true;
          payload.pause();
          done(new DomainError('BODY_TOO_LARGE', `An upload carries at most ${NETTEST_MAX_BYTES} bytes.`), undefined);
        }
      });
      payload.on('end', () => {
        if (settled) return;
        settled = true;
        done(null, new UploadCount(bytes));
      });
      payload.on('error', (error) => {
        if (settled) return;
        settled = true;
        done(error, undefined);
      });
    });
    (scope as unknown as TypedApp).post(
      '/api/v1/nettest/upload',
      {
        config: { auth: 'public', cache: 'public' },
        onRequest: limitTransfers,
        schema: {
          summary: 'Network test: upload',
          description: `Reads and discards an application/octet-stream body of at most ${NETTEST_MAX_BYTES} bytes; answers how many arrived.`,
          response: withErrors({ 200: NettestUploadResult }, 413, 415),
        },
      },
      async (request) => {
        const body: unknown = request.body;
        if (!(body instanceof UploadCount)) throw new DomainError('UNSUPPORTED_MEDIA_TYPE', 'Upload an application/octet-stream body.');
        return { bytes: body.bytes };
      },
    );
  });
}
