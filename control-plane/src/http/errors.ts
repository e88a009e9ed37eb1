import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ERROR_CATALOG, type ErrorCode, ImageDigest, UUID_PATTERN } from '@ark/shared';
import { DomainError } from '../errors.js';
import { storeUnavailable } from '../store/db.js';
import { RouteMethods } from './method-not-allowed.js';

interface AjvIssue {
  instancePath?: string;
  message?: string;
  keyword?: string;
  params?: Record<string, unknown>;
}

/**
 * Patterns people meet, said in a sentence with an example instead of the regular expression: a UUID, an image pinned
 * by digest (with how to pin a tag). Any other pattern keeps the validator's own words.
 */
const PATTERN_SENTENCES = new Map<string, string>([
  [UUID_PATTERN.source, 'must be a UUID, such as 3f2c9a4e-8b1d-4c7e-9f0a-5d6e7b8c9d0e'],
  [
    ImageDigest.pattern as string,
    'must be an image pinned by digest, such as ghcr.io/org/app@sha256:<64 hex digits>; a tag (app:1.2) is not enough: `ark images resolve ghcr.io/org/app:1.2` prints its digest',
  ],
]);

/** A message that names the offending field, e.g. `body/email must match format "email"`. */
function describeValidation(context: string | undefined, issues: AjvIssue[]): string {
  const first = issues[0];
  if (!first) return 'The request is invalid.';
  const where = `${context ?? 'request'}${first.instancePath ?? ''}`;
  if (first.keyword === 'additionalProperties' && first.params?.additionalProperty) {
    return `${where} must not have the property "${String(first.params.additionalProperty)}"`;
  }
  if (first.keyword === 'required' && first.params?.missingProperty) {
    return `${where} must have the property "${String(first.params.missingProperty)}"`;
  }
  if (first.keyword === 'pattern' && typeof first.params?.pattern === 'string') {
    const sentence = PATTERN_SENTENCES.get(first.params.pattern);
    if (sentence !== undefined) return `${where} ${sentence}`;
  }
  if (first.keyword === 'format' && first.params?.format === 'uuid') return `${where} ${PATTERN_SENTENCES.get(UUID_PATTERN.source)}`;
  return `${where} ${first.message ?? 'is invalid'}`;
}

export function envelope(code: string, message: string, retryable: boolean, requestId: string) {
  return { error: { code, message, retryable, request_id: requestId } };
}

export function sendError(request: FastifyRequest, reply: FastifyReply, code: ErrorCode, message?: string, status?: number) {
  const spec = ERROR_CATALOG[code];
  const answered = status ?? spec.status;
  request.discardIdempotency = spec.retryable || answered >= 500;
  return reply
    .code(answered)
    .type('application/json')
    .send(envelope(code, message ?? spec.message, spec.retryable, request.id));
}

/** The one place where failures become the contract's envelope. Causes are logged, never sent. */
export function installErrorHandling(app: FastifyInstance): void {
  const routeMethods = new RouteMethods();
  app.addHook('onRoute', routeMethods.onRoute);
  /** A request no route serves: 405 with `Allow` on a path served with other methods, else 404. */
  const noRoute = (request: FastifyRequest, reply: FastifyReply) => {
    const path = request.url.split('?')[0] ?? '/';
    // A path that is served, with another method: 405 and the methods it takes.
    const allowed = routeMethods.allowed(path);
    if (allowed.length > 0) {
      reply.header('allow', allowed.join(', '));
      return sendError(request, reply, 'METHOD_NOT_ALLOWED', `${request.method} is not allowed on ${path}; use ${allowed.join(', ')}.`);
    }
    return sendError(request, reply, 'NOT_FOUND', `No route ${request.method} ${path}`);
  };
  app.setErrorHandler((error: FastifyError, request, reply) => {
    // Fastify parses a body before the not-found handler runs: a request that reaches no route answers 404/405 for
    // the route, whatever its body (an unsupported media type or a malformed body is not the first thing wrong).
    if (request.is404 && typeof error.code === 'string' && error.code.startsWith('FST_ERR_CTP_')) return noRoute(request, reply);
    if (error instanceof DomainError) return sendError(request, reply, error.code, error.message, error.status);
    if (error.validation) {
      return sendError(request, reply, 'VALIDATION_FAILED', describeValidation(error.validationContext, error.validation as AjvIssue[]));
    }
    switch (error.code) {
      case 'FST_ERR_CTP_INVALID_JSON_BODY':
      case 'FST_ERR_CTP_EMPTY_JSON_BODY':
        return sendError(request, reply, 'MALFORMED_JSON');
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        return sendError(request, reply, 'BODY_TOO_LARGE');
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
        return sendError(request, reply, 'UNSUPPORTED_MEDIA_TYPE');
    }
    if (error instanceof SyntaxError) return sendError(request, reply, 'MALFORMED_JSON');
    if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
      request.log.info({ err: error }, 'client error');
      return sendError(request, reply, error.statusCode === 404 ? 'NOT_FOUND' : 'VALIDATION_FAILED');
    }
    if (storeUnavailable(error)) {
      request.log.warn({ err: error }, 'store unavailable');
      return sendError(request, reply, 'UNAVAILABLE', 'The database is unavailable for a moment; retry the request.', 503);
    }
    request.log.error({ err: error }, 'unhandled error');
    return sendError(request, reply, 'INTERNAL');
  });
  app.setNotFoundHandler(noRoute);
}
