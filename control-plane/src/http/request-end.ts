import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

// What runs once per answered request (the metrics, the "request completed" line) without Fastify's onResponse
// hooks. Fastify runs those hooks from a `finish` and an `error` listener that it adds, with a closure, to every
// response of an app that has any onResponse hook or a logger: work on every request that bare Fastify skips (a few
// percent of the authenticated read; test/bench/README.md). Node already publishes every response an http.Server
// finishes on the `http.server.response.finish` diagnostics channel; one subscriber per app reads it there.
// A request injected without a server (`app.inject`) is published nowhere: it gets a `finish` listener of its own.

/** One answered request, when its last byte was handed to the socket. */
export interface RequestEnd {
  request: FastifyRequest;
  statusCode: number;
  /** From the app's first onRequest hook to the end of the answer. */
  elapsedMs: number;
}
export type RequestEndListener = (end: RequestEnd) => void;

declare module 'fastify' {
  interface FastifyRequest {
    /** performance.now() when the request reached the app's hooks (observeRequestEnds). */
    receivedAtMs: number;
  }
}

const FINISHED = 'http.server.response.finish';
type ObservedRaw = IncomingMessage & { [observer: symbol]: FastifyRequest | undefined };
interface FinishedMessage {
  request: ObservedRaw;
  response: ServerResponse;
  server: unknown;
}

/**
 * Calls `listeners` once for every request the app answers (404s and refusals included), from a first onRequest
 * hook on. Requests a server refuses before routing (a malformed request line, a connection over the per-address
 * bound) never reach the app and are not seen, as they were not by onResponse hooks. Once per app: it decorates the
 * request (`receivedAtMs`), and Fastify refuses a second decoration. `listeners` is read at each answer: a listener
 * pushed onto it later (a plugin installed after this) hears every answer from then on.
 */
export function observeRequestEnds(app: FastifyInstance, listeners: readonly RequestEndListener[]): void {
  // The Fastify request a raw request belongs to, set while it is being answered.
  const OBSERVED = Symbol('ark.observedRequest');
  const ended = (request: FastifyRequest, statusCode: number) => {
    const end: RequestEnd = { request, statusCode, elapsedMs: performance.now() - request.receivedAtMs };
    for (const listener of listeners) listener(end);
  };
  const onFinished = (message: unknown) => {
    const { request: raw, response, server } = message as FinishedMessage;
    if (server !== app.server) return;
    const request = raw[OBSERVED];
    if (request === undefined) return;
    raw[OBSERVED] = undefined;
    ended(request, response.statusCode);
  };
  app.decorateRequest('receivedAtMs', 0);
  subscribe(FINISHED, onFinished);
  app.addHook('onClose', (_instance, done) => {
    unsubscribe(FINISHED, onFinished);
    done();
  });
  // Callback style: no promise per request.
  app.addHook('onRequest', (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    request.receivedAtMs = performance.now();
    const raw = request.raw as ObservedRaw;
    if (raw.socket instanceof Socket) raw[OBSERVED] = request;
    else reply.raw.once('finish', () => ended(request, reply.raw.statusCode));
    done();
  });
}
