import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { DomainError } from '../errors.js';
import { type EdgeOptions, edgeServerOptions, installEdge } from './edge.js';
import { installErrorHandling } from './errors.js';
import { securityHeaders } from './security-headers.js';
import type { RequestEndListener } from './request-end.js';
import { routeOptionsOf } from './route-options.js';

export interface Metrics {
  registry: Registry;
  httpRequests: Counter<'method' | 'route' | 'status'>;
  httpDuration: Histogram<'method' | 'route'>;
}

/** Upper bounds of the request duration histogram, in seconds. */
const DURATION_BUCKETS_S = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5];

/** Requests of one (method, route, status): a plain number, handed to prom-client when scraped. */
interface RequestSeries {
  labels: { method: string; route: string; status: string };
  count: number;
}

/** Durations of one (method, route), kept as prom-client keeps them: per-bound counts, a running sum and a count. */
interface DurationSeries {
  labels: { method: string; route: string };
  /** Observations per upper bound (not cumulative), indexed like DURATION_BUCKETS_S; above the last only in count. */
  buckets: number[];
  sum: number;
  count: number;
}

/**
 * The per-request counts, in plain numbers. Every request used to go through prom-client's `inc` and `observe`
 * (label validation, a label hash and a map lookup each, about a tenth of the account read's CPU); now a request
 * adds to these, and the counter and histogram are rebuilt from them when scraped (their `collect`), series in the
 * order they were first seen, as prom-client orders them, so the exposition is the same.
 */
class HttpCounts {
  readonly requests: RequestSeries[] = [];
  readonly durations: DurationSeries[] = [];
  /** method -> route -> status -> series, found by the strings Fastify already holds (no key string per request). */
  readonly #byMethod = new Map<string, Map<string, { duration: DurationSeries; byStatus: Map<number, RequestSeries> }>>();

  record(method: string, route: string, status: number, seconds: number): void {
    let byRoute = this.#byMethod.get(method);
    if (!byRoute) {
      byRoute = new Map();
      this.#byMethod.set(method, byRoute);
    }
    let forRoute = byRoute.get(route);
    if (!forRoute) {
      const duration = { labels: { method, route }, buckets: DURATION_BUCKETS_S.map(() => 0), sum: 0, count: 0 };
      forRoute = { duration, byStatus: new Map() };
      byRoute.set(route, forRoute);
      this.durations.push(duration);
    }
    let requests = forRoute.byStatus.get(status);
    if (!requests) {
      requests = { labels: { method, route, status: String(status) }, count: 0 };
      forRoute.byStatus.set(status, requests);
      this.requests.push(requests);
    }
    requests.count += 1;
    // As prom-client observes: the first bound the value does not exceed, a running sum, a count.
    const duration = forRoute.duration;
    for (let i = 0; i < DURATION_BUCKETS_S.length; i++) {
      if (seconds <= (DURATION_BUCKETS_S[i] as number)) {
        duration.buckets[i] = (duration.buckets[i] as number) + 1;
        break;
      }
    }
    duration.sum += seconds;
    duration.count += 1;
  }
}

/** The slice of prom-client's histogram state that `collect` fills (prom-client 15: `hashMap`, one entry per label set). */
type HistogramState = { hashMap: Record<string, { bucketValues: Record<number, number>; sum: number; count: number }> };

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'ark_cp_' });
  const counts = new HttpCounts();
  const metrics: Metrics & { [HTTP_COUNTS]: HttpCounts } = {
    registry,
    httpRequests: new Counter({
      name: 'ark_http_requests_total',
      help: 'HTTP requests by method, route pattern and status',
      labelNames: ['method', 'route', 'status'],
      registers: [registry],
      collect() {
        this.reset();
        for (const series of counts.requests) this.inc(series.labels, series.count);
      },
    }),
    httpDuration: new Histogram({
      name: 'ark_http_request_duration_seconds',
      help: 'HTTP request duration by route pattern',
      labelNames: ['method', 'route'],
      buckets: DURATION_BUCKETS_S,
      registers: [registry],
      collect() {
        this.reset();
        for (const series of counts.durations) this.zero(series.labels);
        // zero() added one entry per series, in this order (the keys are label strings, so insertion order holds).
        const entries = Object.values((this as unknown as HistogramState).hashMap);
        counts.durations.forEach((series, i) => {
          const entry = entries[i];
          if (!entry) return;
          DURATION_BUCKETS_S.forEach((bound, k) => {
            entry.bucketValues[bound] = series.buckets[k] as number;
          });
          entry.sum = series.sum;
          entry.count = series.count;
        });
      },
    }),
    [HTTP_COUNTS]: counts,
  };
  return metrics;
}

/** Where a Metrics made by createMetrics keeps its plain counts (not part of the interface: tests build their own). */
const HTTP_COUNTS = Symbol('httpCounts');

/** Records each answered request in `metrics`: by method, route pattern and status, and its duration. */
export function metricsRecorder(metrics: Metrics): RequestEndListener {
  const counts = (metrics as Metrics & { [HTTP_COUNTS]?: HttpCounts })[HTTP_COUNTS];
  return ({ request, statusCode, elapsedMs }) => {
    // Route patterns, never raw URLs, keep the label set bounded.
    const route = routeOptionsOf(request).url ?? 'unmatched';
    const seconds = elapsedMs / 1000;
    if (counts) counts.record(request.method, route, statusCode, seconds);
    else {
      // A Metrics not made by createMetrics: straight to prom-client.
      metrics.httpRequests.inc({ method: request.method, route, status: String(statusCode) });
      metrics.httpDuration.observe({ method: request.method, route }, seconds);
    }
  };
}

/** The treasury's reconciliation with the ledger (issue 22), set by workers/reconcile.ts after each run. */
export interface TreasuryGauges {
  /** Holdings less what the ledger owes, per ledger asset (USD): negative is a deficit. */
  surplus: Gauge<'asset'>;
  /** What the chain must hold: available + held + payable + locked, less transfers in flight. */
  owed: Gauge<'asset'>;
  /** Holdings per network, asset and place, in whole units of the asset (native coins included, information only). */
  holdings: Gauge<'network' | 'asset' | 'place'>;
  /** The finalized block each network was read at. */
  block: Gauge<'network'>;
  /** When the last reconciliation finished (unix seconds): an alert rule can catch one that stopped running. */
  reconciledAt: Gauge;
}

export function treasuryGauges(registry: Registry): TreasuryGauges {
  return {
    surplus: new Gauge({
      name: 'ark_treasury_surplus_micro',
      help: 'Stablecoins held on chain less what the ledger owes, in micro-USD (negative: a deficit), per ledger asset',
      labelNames: ['asset'],
      registers: [registry],
    }),
    owed: new Gauge({
      name: 'ark_treasury_owed_micro',
      help: 'What the ledger owes (available + held + payable + locked, less transfers in flight), in micro-USD',
      labelNames: ['asset'],
      registers: [registry],
    }),
    holdings: new Gauge({
      name: 'ark_treasury_holdings',
      help: 'Holdings at the last reconciled block, in whole units of the asset, per network, asset and place',
      labelNames: ['network', 'asset', 'place'],
      registers: [registry],
    }),
    block: new Gauge({
      name: 'ark_treasury_reconciled_block',
      help: 'The finalized block the last reconciliation read, per network',
      labelNames: ['network'],
      registers: [registry],
    }),
    reconciledAt: new Gauge({
      name: 'ark_treasury_reconciled_timestamp_seconds',
      help: 'When the last reconciliation of the chain with the ledger finished',
      registers: [registry],
    }),
  };
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

/**
 * ark_http_proxy_header_refusals_total{reason}: a load balancer's connections closed before any request for their
 * PROXY protocol header (http/proxied-connections.ts): `invalid`, `timeout` or `closed`. Anything above zero is a
 * balancer not configured to send the header (send-proxy-v2), or a peer in ARK_PROXY_PROTOCOL_FROM that is no balancer.
 */
export function proxyHeaderRefusalCounter(registry: Registry): Counter<'reason'> {
  const name = 'ark_http_proxy_header_refusals_total';
  const existing = registry.getSingleMetric(name);
  if (existing) return existing as Counter<'reason'>;
  return new Counter({
    name,
    help: 'Load balancer connections closed for a missing, broken or late PROXY protocol header, by reason',
    labelNames: ['reason'],
    registers: [registry],
  });
}
