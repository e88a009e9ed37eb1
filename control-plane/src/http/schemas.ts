import { ErrorEnvelope } from '@ark/shared';
import { type TSchema, Type } from '@sinclair/typebox';
import type { RouteOptions } from 'fastify';
import type { AuthRequirement } from './principal.js';

const errorRef = Type.Ref(ErrorEnvelope);

/** Every route's error statuses, all answered with the envelope. */
export function withErrors<R extends Record<number, TSchema>>(responses: R, ...statuses: number[]) {
  const all: Record<number, TSchema> = { ...responses };
  for (const status of [401, 422, 429, ...statuses]) all[status] = errorRef;
  return all as R;
}

/**
 * Completes each route's OpenAPI description from what the plumbing enforces, so no route can forget it:
 * public routes need no bearer, guarded ones name theirs and may answer 401/403, routes with path ids 404,
 * idempotent ones 409, routes with bodies 413/415.
 */
export function documentRoute(route: RouteOptions): void {
  const schema = (route.schema ?? {}) as Record<string, any>;
  const config = (route.config ?? {}) as { auth?: AuthRequirement; idempotent?: boolean };
  // Each operation states its own requirement: none for public ones, else the bearer with the scope it needs
  // (OpenAPI 3.1 lets a bearer requirement list role names), the rest of the requirement in x-ark-auth.
  if (config.auth === 'public') schema.security = [];
  else if (config.auth) {
    schema.security = [{ bearer: config.auth.scope ? [config.auth.scope] : [] }];
    schema['x-ark-auth'] = { ...config.auth };
  }
  const response = schema.response as Record<string, TSchema> | undefined;
  if (!response || schema.hide) return;
  const statuses = [422, 429];
  if (config.auth !== 'public') statuses.push(401, 403);
  if (route.url.includes(':')) statuses.push(404);
  if (config.idempotent) statuses.push(409);
  if (schema.body) statuses.push(413, 415);
  for (const status of statuses) if (!(status in response)) response[status] = errorRef;
  route.schema = schema;
}
