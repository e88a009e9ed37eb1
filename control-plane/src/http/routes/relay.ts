import { IdParams } from '@ark/shared';
import { Type } from '@sinclair/typebox';
import { DomainError } from '../../errors.js';
import { JobRelay, type RelayPath } from '../../relay/relay.js';
import type { RelayTunnel } from '../../relay/tunnel.js';
import { assertOwnerOrAdmin, principalOf } from '../auth.js';
import type { AppContext } from '../context.js';
import { forwardToHolder } from '../forward-to-holder.js';
import { withErrors } from '../schemas.js';
import type { TypedApp } from '../typed-app.js';

// The OpenAI-compatible relay (contract part 4, issue 9): the caller's own credential here, the job's engine key
// added by the machine's agent towards the engine; answers passed through, event streams unbuffered.

const RelayRequestBody = Type.Object(
  {
    model: Type.Optional(Type.String({ maxLength: 256 })),
    stream: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: true, description: 'An OpenAI-compatible request; passed to the engine as sent.' },
);

const EngineAnswer = Type.Object(
  {},
  {
    additionalProperties: true,
    description: "The engine's answer, passed through (JSON); with stream: true a text/event-stream relayed chunk by chunk.",
  },
);

const STREAM_NOTE =
  "Renter owner or admin (anyone else: 404), with the caller's own credential; the job's engine key is added on the machine. Only RUNNING jobs " +
  'on model-kind templates: another kind is 403 RELAY_NOT_MODEL_JOB, another state 409 RELAY_JOB_NOT_RUNNING; too many open requests on the ' +
  'job 429 UNAVAILABLE; an engine that cannot be reached or does not begin answering in time 503. Limits: ARK_RELAY_MAX_BODY_BYTES, ' +
  'ARK_RELAY_FIRST_BYTE_TIMEOUT_S, ARK_RELAY_MAX_STREAM_S, ARK_RELAY_MAX_STREAMS_PER_JOB.';

/** Marks a request one replica forwarded to the one holding the machine's channel: it is never forwarded again. */
export const RELAY_HOP_HEADER = 'x-ark-relay-hop';

export function registerRelayRoutes(
  app: TypedApp,
  ctx: AppContext,
  tunnel: RelayTunnel,
  /** Whether this replica holds the machine's channel now. */
  connectedHere: (machineId: string) => boolean,
): void {
  const relay = new JobRelay(tunnel, ctx.config.relay, ctx.clock);
  const jobs = ctx.services.jobs;
  const replicas = ctx.services.hosting.replicas;

  const forward = (path: RelayPath) => async (request: any, reply: any) => {
    const principal = principalOf(request);
    const job = await jobs.reads.find(request.params.id);
    if (!job) throw new DomainError('NOT_FOUND');
    assertOwnerOrAdmin(principal, job.accountId);
    JobRelay.assertRelayable(job);
    // Several replicas: the machine's channel may be held by another one, which answers it.
    if (!connectedHere(job.machineId) && request.headers[RELAY_HOP_HEADER] === undefined) {
      const holder = await replicas.elsewhere(job.machineId);
      if (holder !== null)
        return forwardToHolder(holder, request, reply, { hopHeader: RELAY_HOP_HEADER, unreachable: 'RELAY_ENGINE_UNREACHABLE' });
    }
    const body = request.method === 'POST' ? Buffer.from(JSON.stringify(request.body)) : null;
    const answer = await relay.call({ job, method: request.method, path, body });
    // The client went away before the engine finished (or while the answer was being opened): the agent aborts the
    // engine request and the job's stream slot is freed.
    if (reply.raw.destroyed || request.raw.socket?.destroyed === true) {
      answer.cancel();
      return reply;
    }
    reply.raw.once('close', () => {
      if (!reply.raw.writableFinished) answer.cancel();
    });
    reply.code(answer.status).type(answer.contentType || 'application/octet-stream');
    if (answer.contentType.startsWith('text/event-stream')) {
      // Nothing between here and the client may hold chunks back.
      reply.header('x-accel-buffering', 'no').header('content-encoding', 'identity');
    }
    return reply.send(answer.body);
  };

  for (const [suffix, summary] of [
    ['chat/completions', 'OpenAI-compatible chat completion on a model job'],
    ['completions', 'OpenAI-compatible completion on a model job'],
  ] as const) {
    app.post(
      `/api/v1/jobs/:id/openai/v1/${suffix}`,
      {
        bodyLimit: ctx.config.relay.maxBodyBytes,
        config: { auth: { scope: 'renter' } },
        schema: {
          tags: ['relay'],
          summary,
          description: STREAM_NOTE,
          params: IdParams,
          body: RelayRequestBody,
          response: withErrors({ 200: EngineAnswer }, 403, 404, 409, 503),
        },
      },
      forward(`/v1/${suffix}`),
    );
  }

  app.get(
    '/api/v1/jobs/:id/openai/v1/models',
    {
      config: { auth: { scope: 'renter' } },
      schema: {
        tags: ['relay'],
        summary: "The model list of a model job's engine",
        description: STREAM_NOTE,
        params: IdParams,
        response: withErrors({ 200: EngineAnswer }, 403, 404, 409, 503),
      },
    },
    forward('/v1/models'),
  );
}
