import type { FastifyInstance } from 'fastify';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

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
  // Callback style (no promise per request), and one pair of label objects per (method, route, status), built once.
  const labels = new Map<
    string,
    { request: { method: string; route: string; status: string }; duration: { method: string; route: string } }
  >();
  app.addHook('onResponse', (request, reply, done) => {
    // Route patterns, never raw URLs, keep the label set bounded.
    const route = request.routeOptions.url ?? 'unmatched';
    const key = `${request.method} ${reply.statusCode} ${route}`;
    let pair = labels.get(key);
    if (!pair) {
      pair = { request: { method: request.method, route, status: String(reply.statusCode) }, duration: { method: request.method, route } };
      labels.set(key, pair);
    }
    metrics.httpRequests.inc(pair.request);
    metrics.httpDuration.observe(pair.duration, reply.elapsedTime / 1000);
    done();
  });
}
