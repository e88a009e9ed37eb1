import type { FastifyInstance } from 'fastify';
import { DomainError } from '../errors.js';
import { routeOptionsOf } from './route-options.js';

/** No request body of the API nests deeper than a few levels; the bound keeps recursive code (hashing, validation) safe. */
export const JSON_BODY_MAX_DEPTH = 64;

/** Nothing but whitespace, or an empty object (trimmed first: no pattern over the whole body can backtrack). */
function isEmptyBody(text: string): boolean {
  const trimmed = text.trim();
  return trimmed === '' || /^\{\s*\}$/.test(trimmed);
}

/** Whether JSON text nests objects and arrays deeper than `max`; a linear scan, before anything is built from it. */
export function jsonNestsDeeperThan(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      // A backslash escapes the next character; a quote ends the string.
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

/**
 * Replaces Fastify's JSON body parser (keeping its prototype-poisoning checks) with one that:
 * - refuses bodies nested deeper than JSON_BODY_MAX_DEPTH with 422 before parsing them;
 * - refuses a JSON body sent to an operation that takes none ("no body" in the contract, or one that reads another
 *   media type) with 415 (422 MALFORMED_JSON when it is not even JSON); `{}` or nothing is no body. Nothing downstream
 *   (idempotency hashing included) ever sees it;
 * - leaves requests that reach no route unparsed, so they answer 404 or 405 whatever they carry.
 */
export function installJsonBodyParser(app: FastifyInstance, maxDepth: number = JSON_BODY_MAX_DEPTH): void {
  const parse = app.getDefaultJsonParser(
    app.initialConfig.onProtoPoisoning ?? 'error',
    app.initialConfig.onConstructorPoisoning ?? 'error',
  );
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, raw, done) => {
    const body = raw as string;
    if (request.is404) return done(null, undefined);
    if (jsonNestsDeeperThan(body, maxDepth)) {
      return done(new DomainError('VALIDATION_FAILED', `The request body nests deeper than ${maxDepth} levels.`), undefined);
    }
    if (routeOptionsOf(request).schema?.body) return parse(request, body, done);
    // Empty, or an empty object (what many clients send with every POST): no body.
    if (isEmptyBody(body)) return done(null, undefined);
    // Parsed only to say which of the two refusals it is; the value is dropped.
    parse(request, body, (error) =>
      done(error ?? new DomainError('UNSUPPORTED_MEDIA_TYPE', 'This operation takes no JSON body.'), undefined),
    );
  });
}
