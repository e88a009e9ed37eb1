import type { FastifyRequest } from 'fastify';

declare module 'fastify' {
  interface FastifyRequest {
    /** `routeOptions` as first read in this request (see routeOptionsOf). */
    cachedRouteOptions: FastifyRequest['routeOptions'] | null;
  }
}

/**
 * The matched route's options, read once per request. Fastify's `request.routeOptions` is a getter that builds a
 * new twelve-field object, and asks the router about its constraint strategies, on every read; the hooks every
 * request runs (cache headers, authentication, the page policy, metrics) each want one field of it.
 */
export function routeOptionsOf(request: FastifyRequest): FastifyRequest['routeOptions'] {
  request.cachedRouteOptions ??= request.routeOptions;
  return request.cachedRouteOptions;
}
