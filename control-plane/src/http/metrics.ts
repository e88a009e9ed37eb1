import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { DomainError } from '../errors.js';
import { type EdgeOptions, edgeServerOptions, installEdge } from './edge.js';
import { installErrorHandling } from './errors.js';
import { securityHeaders } from './security-headers.js';

export interface Metrics {
  registry: Registry;
  httpRequests: Counter<'method' | 'route' | 'status'>;
  httpDuration: Histogram<'method' | 'route'>;
}

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'ark_cp_' });
  return {
    registry,
    httpRequests: new Counter({
      name: 'ark_http_requests_total',
      help: 'HTTP requests by method, route pattern and status',
      labelNames: ['method', 'route', 'status'],
      registers: [registry],
    }),
    httpDuration: new Histogram({
      name: 'ark_http_request_duration_seconds',
      help: 'HTTP request duration by route pattern',
      labelNames: ['method', 'route'],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
      registers: [registry],
    }),
  };
}

export function installMetrics(app: FastifyInstance, metrics: Metrics): void {
  // Callback style (no promise per request), and one pair of label objects per (method, route, status), built once
  // and found by the strings Fastify already holds (no key string built and hashed per request).
  type Pair = { request: { method: string; route: string; status: string }; duration: { method: string; route: string } };
  const labels = new Map<string, Map<string, Map<number, Pair>>>();
  app.addHook('onResponse', (request, reply, done) => {
    // Route patterns, never raw URLs, keep the label set bounded.
    const route = request.routeOptions.url ?? 'unmatched';
    const method = request.method;
    const status = reply.statusCode;
    let byRoute = labels.get(method);
    if (!byRoute) {
      byRoute = new Map();
      labels.set(method, byRoute);
    }
    let byStatus = byRoute.get(route);
    if (!byStatus) {
      byStatus = new Map();
      byRoute.set(route, byStatus);
    }
    let pair = byStatus.get(status);
    if (!pair) {
      pair = { request: { method, route, status: String(status) }, duration: { method, route } };
      byStatus.set(status, pair);
    }
    metrics.httpRequests.inc(pair.request);
    metrics.httpDuration.observe(pair.duration, reply.elapsedTime / 1000);
    done();
  });
}

/** Constant-time bearer check: both sides are hashed first, so neither the token's length nor its bytes leak in timing. */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const presented = createHash('sha256').update(String(header)).digest();
  const expected = createHash('sha256').update(`Bearer ${token}`).digest();
  return timingSafeEqual(presented, expected);
}

/**
 * GET /metrics on an app: the Prometheus exposition, unchanged. With a token, scrapers must send it as a bearer
 * (deployments that expose the API publicly); without one, keep /metrics off the public listener instead.
 */
export function registerMetricsRoute(app: FastifyInstance, metrics: Metrics, token: string | null): void {
  app.get(
    '/metrics',
    {
      config: { auth: 'public', cache: 'public' },
      schema: { hide: true },
      onRequest: (request, _reply, done) =>
        done(token === null || bearerMatches(request.headers.authorization, token) ? undefined : METRICS_REFUSED()),
    },
    async (_request, reply) => {
      reply.type(metrics.registry.contentType);
      return metrics.registry.metrics();
    },
  );
}

const METRICS_REFUSED = () => new DomainError('UNAUTHENTICATED', 'The metrics token is missing or wrong.');

/** A small second listener that serves only /metrics, for deployments that keep it off the API's address. */
export async function startMetricsListener(
  metrics: Metrics,
  options: { host: string; port: number; token: string | null; publicBaseUrl: string },
): Promise<{ address: string; close(): Promise<void> }> {
  const edge = metricsEdge(options.publicBaseUrl);
  const app = Fastify({ logger: false, genReqId: () => randomUUID(), requestIdHeader: false, ...edgeServerOptions(edge) });
  installEdge(app, edge);
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id).header('cache-control', 'no-store');
    done();
  });
  installErrorHandling(app);
  registerMetricsRoute(app, metrics, options.token);
  const address = await app.listen({ host: options.host, port: options.port });
  return { address, close: () => app.close() };
}

/** Scrapers are quick: short timeouts, a few connections per address. */
const metricsEdge = (publicBaseUrl: string): EdgeOptions => ({
  requestTimeoutMs: 10_000,
  headersTimeoutMs: 5_000,
  maxConnectionsPerAddress: 16,
  headers: securityHeaders(publicBaseUrl),
});
