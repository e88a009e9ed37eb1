// The agent's own Prometheus metrics: prom-client registers them, a node:http server on the configured loopback
// address answers GET /metrics. `run` imports this module only when metrics_listen is set, so an agent without
// metrics never loads prom-client (the bundle keeps it external and lazy, host-agent/scripts/bundle.mjs).
import { type Server, createServer } from 'node:http';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { AgentMetricsHooks, CollectorName, PullOutcome } from './hooks.js';

/** What the exporter reads at scrape time (the agent's status report has all of it). */
export interface MetricsSnapshot {
  runningJobs: number;
  /** `reconnects`: the channel client's count of connection attempts after a lost or refused connection. */
  channel: { connected: boolean; reconnects: number; queued: number };
}

export interface MetricsServerOptions {
  host: string;
  port: number;
  /** Read on each scrape; undefined before the agent exists (the gauges then report nothing). */
  snapshot: () => MetricsSnapshot | undefined;
}

export interface MetricsServer {
  hooks: AgentMetricsHooks;
  /** The bound address (the port is the real one when 0 was asked for). */
  address: { host: string; port: number };
  close(): Promise<void>;
}

export async function startMetricsServer(options: MetricsServerOptions): Promise<MetricsServer> {
  const registry = new Registry();
  // Process figures (RSS, CPU, event-loop lag, heap) under the agent's prefix, as the control plane does with ark_cp_.
  collectDefaultMetrics({ register: registry, prefix: 'ark_agent_' });
  const registers = [registry];

  new Gauge({
    name: 'ark_agent_jobs_running',
    help: 'Jobs this agent runs now (those its heartbeat reports)',
    registers,
    collect() {
      const snapshot = options.snapshot();
      if (snapshot !== undefined) this.set(snapshot.runningJobs);
    },
  });
  const jobsStarted = new Counter({
    name: 'ark_agent_jobs_started_total',
    help: 'Jobs that reached ready (their container started and answered) since the agent started',
    registers,
  });
  const jobsFailed = new Counter({ name: 'ark_agent_jobs_failed_total', help: 'Jobs reported failed since the agent started', registers });
  const jobStatuses = new Counter({
    name: 'ark_agent_job_statuses_total',
    help: 'job_status messages the job runtime reported, by status',
    labelNames: ['status'],
    registers,
  });
  const pulls = new Counter({
    name: 'ark_agent_image_pulls_total',
    help: 'Image pulls by outcome: pulled (fetched from the registry), present (already there under its digest), failed',
    labelNames: ['outcome'],
    registers,
  });
  const pullBytes = new Counter({
    name: 'ark_agent_image_pull_bytes_total',
    help: 'Size of the images pulled from registries, as Docker reports it after the pull',
    registers,
  });
  const pullSeconds = new Histogram({
    name: 'ark_agent_image_pull_duration_seconds',
    help: 'Duration of image pulls by outcome',
    labelNames: ['outcome'],
    buckets: [0.1, 0.5, 1, 5, 15, 30, 60, 120, 300, 600, 1800],
    registers,
  });
  new Gauge({
    name: 'ark_agent_channel_connected',
    help: '1 while the signed channel to the control plane is up, else 0',
    registers,
    collect() {
      const snapshot = options.snapshot();
      if (snapshot !== undefined) this.set(snapshot.channel.connected ? 1 : 0);
    },
  });
  const connects = new Counter({
    name: 'ark_agent_channel_reconnects_total',
    help: 'Times the channel was established again after losing its connection, since the agent started',
    registers,
  });
  let connectedOnce = false;
  new Gauge({
    name: 'ark_agent_channel_reconnect_attempts',
    help: 'Connection attempts made after a lost or refused connection, since the agent started',
    registers,
    collect() {
      const snapshot = options.snapshot();
      if (snapshot !== undefined) this.set(snapshot.channel.reconnects);
    },
  });
  new Gauge({
    name: 'ark_agent_resend_queue_depth',
    help: 'Reliable messages (telemetry, job statuses, receipts) waiting for the control plane to acknowledge them',
    registers,
    collect() {
      const snapshot = options.snapshot();
      if (snapshot !== undefined) this.set(snapshot.channel.queued);
    },
  });
  const heartbeats = new Counter({
    name: 'ark_agent_heartbeats_sent_total',
    help: 'Heartbeats sent on a connected channel since the agent started',
    registers,
  });
  const collectorErrors = new Counter({
    name: 'ark_agent_collector_errors_total',
    help: 'Samples in which a collector could not read what it measures, by collector (gpu: nvidia-smi, host: a host figure)',
    labelNames: ['collector'],
    registers,
  });
  // Both collectors appear from the first scrape, at 0, so a rate() has a start.
  for (const collector of ['gpu', 'host'] satisfies CollectorName[]) collectorErrors.inc({ collector }, 0);

  const hooks: AgentMetricsHooks = {
    jobStatus(status) {
      jobStatuses.inc({ status });
      if (status === 'ready') jobsStarted.inc();
      if (status === 'failed') jobsFailed.inc();
    },
    imagePull(outcome: PullOutcome, seconds, bytes) {
      pulls.inc({ outcome });
      pullSeconds.observe({ outcome }, seconds);
      if (outcome === 'pulled' && bytes !== undefined && bytes > 0) pullBytes.inc(bytes);
    },
    collectorError(collector) {
      collectorErrors.inc({ collector });
    },
    heartbeatSent() {
      heartbeats.inc();
    },
    channelConnected() {
      if (connectedOnce) connects.inc();
      connectedOnce = true;
    },
  };

  const server: Server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?', 1)[0];
    if (request.method !== 'GET' || path !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found: GET /metrics\n');
      return;
    }
    registry.metrics().then(
      (text) => response.writeHead(200, { 'content-type': registry.contentType }).end(text),
      (error: unknown) => response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end(`${String(error)}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = server.address();
  const port = typeof bound === 'object' && bound !== null ? bound.port : options.port;
  return {
    hooks,
    address: { host: options.host, port },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
