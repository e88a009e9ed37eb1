import { Readable } from 'node:stream';
import type { ErrorCode } from '@ark/shared';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DomainError } from '../errors.js';

// Streams that reach an agent (the relay, job logs) are served by the replica holding the machine's channel. Another
// replica forwards the request there as the client sent it (its own credential included: the holder authenticates and
// authorizes it again), marked with a hop header so it is never forwarded twice, and streams the answer back
// unbuffered; the client leaving ends the holder's request too.

export interface ForwardOptions {
  /** The header that marks a forwarded request (the holder refuses to forward it again). */
  hopHeader: string;
  /** The error when the holder cannot be reached. */
  unreachable: ErrorCode;
  /** Replaces the answer's Cache-Control (job logs: no-store). */
  cacheControl?: string;
}

export async function forwardToHolder(replica: string, request: FastifyRequest, reply: FastifyReply, options: ForwardOptions) {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  const post = request.method === 'POST';
  const lastEventId = request.headers['last-event-id'];
  let upstream: Response;
  try {
    upstream = await fetch(`${replica}${request.url}`, {
      method: request.method,
      headers: {
        authorization: String(request.headers.authorization ?? ''),
        accept: String(request.headers.accept ?? '*/*'),
        ...(lastEventId === undefined ? {} : { 'last-event-id': String(lastEventId) }),
        [options.hopHeader]: '1',
        ...(post ? { 'content-type': 'application/json' } : {}),
      },
      ...(post ? { body: JSON.stringify(request.body) } : {}),
      signal: controller.signal,
    });
  } catch (error) {
    throw new DomainError(
      options.unreachable,
      `The replica holding the machine's channel could not be reached: ${(error as Error).message}.`,
    );
  }
  const type = upstream.headers.get('content-type') ?? 'application/octet-stream';
  reply.code(upstream.status).type(type);
  if (options.cacheControl !== undefined) reply.header('cache-control', options.cacheControl);
  if (type.startsWith('text/event-stream')) reply.header('x-accel-buffering', 'no').header('content-encoding', 'identity');
  return reply.send(upstream.body ? Readable.fromWeb(upstream.body as never) : '');
}
