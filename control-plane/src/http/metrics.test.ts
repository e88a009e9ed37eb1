import Fastify from 'fastify';
import { Counter, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createMetrics, type Metrics, metricsRecorder } from './metrics.js';
import { observeRequestEnds } from './request-end.js';

/** The same two metrics fed straight through prom-client, as the recorder did before it counted in plain numbers. */
function referenceMetrics(): Metrics {
  const registry = new Registry();
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

/** The ark_http_* part of an exposition. */
async function httpExposition(metrics: Metrics): Promise<string> {
  const text = await metrics.registry.metrics();
  return text
    .split('\n\n')
    .filter((block) => block.includes('ark_http_'))
    .join('\n\n');
}

describe('HTTP request metrics', () => {
  it('expose exactly what prom-client fed per request would, series in first-seen order', async () => {
    const metrics = createMetrics();
    const reference = referenceMetrics();
    const app = Fastify({ logger: false });
    // Every answer is recorded into both from the same request end: the same labels and the same duration.
    observeRequestEnds(app, [
      metricsRecorder(metrics),
      ({ request, statusCode, elapsedMs }) => {
        const route = request.routeOptions.url ?? 'unmatched';
        reference.httpRequests.inc({ method: request.method, route, status: String(statusCode) });
        reference.httpDuration.observe({ method: request.method, route }, elapsedMs / 1000);
      },
    ]);
    app.get('/a/:id', async () => ({ ok: true }));
    app.post('/b', async (_request, reply) => reply.code(201).send({ ok: true }));
    app.get('/slow', async () => {
      await new Promise((resolve) => setTimeout(resolve, 20));
      return { ok: true };
    });
    for (let i = 0; i < 5; i++) await app.inject({ method: 'GET', url: `/a/${i}` });
    await app.inject({ method: 'POST', url: '/b' });
    await app.inject({ method: 'GET', url: '/slow' });
    await app.inject({ method: 'GET', url: '/nowhere' });
    await app.inject({ method: 'POST', url: '/b' });

    const first = await httpExposition(metrics);
    expect(first).toBe(await httpExposition(reference));
    expect(first).toContain('ark_http_requests_total{method="GET",route="/a/:id",status="200"} 5');
    expect(first).toContain('ark_http_requests_total{method="POST",route="/b",status="201"} 2');
    expect(first).toContain('ark_http_request_duration_seconds_count{method="GET",route="/slow"} 1');
    expect(first).toContain('ark_http_request_duration_seconds_bucket{le="0.01",method="GET",route="/slow"} 0');
    // At least the 20 ms it waited; the upper bucket leaves room for a machine busy with other tests.
    expect(first).toContain('ark_http_request_duration_seconds_bucket{le="1",method="GET",route="/slow"} 1');

    // Scrapes do not reset anything: later requests add to the same series.
    await app.inject({ method: 'GET', url: '/a/9' });
    const second = await httpExposition(metrics);
    expect(second).toBe(await httpExposition(reference));
    expect(second).toContain('ark_http_requests_total{method="GET",route="/a/:id",status="200"} 6');
    await app.close();
  });
});
