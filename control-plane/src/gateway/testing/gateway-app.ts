import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { assembleApp } from '../../app.js';
import { type Clock, systemClock } from '../../clock.js';
import { type Config, loadConfig } from '../../config/index.js';
import { createMetrics, type Metrics } from '../../http/metrics.js';
import { MemoryRateLimiter } from '../../http/rate-limit.js';
import type { TypedApp } from '../../http/typed-app.js';
import { replicaAdapters, serviceAdapters } from '../../runtime.js';
import { buildServices } from '../../services/index.js';
import { fakeReadinessProbes } from '../../testing/readiness.js';
import { type Dialect, openStore } from '../../store/db.js';
import { createTestStore, type TestStore } from '../../testing/stores.js';
import { ChannelHandlers } from '../handlers.js';
import type { ChannelGateway, GatewaySettings } from '../server.js';
import { TestDirectory } from './raw-agent.js';

export interface GatewayTestApp {
  app: TypedApp;
  gateway: ChannelGateway;
  store: TestStore;
  config: Config;
  metrics: Metrics;
  channel: ChannelHandlers;
  directory: TestDirectory;
  /** Every log line the app wrote, parsed. */
  logs: Array<Record<string, unknown>>;
  /** http://127.0.0.1:<port> */
  baseUrl: string;
  controlPlanePublicKey: string;
  close(): Promise<void>;
}

export interface GatewayTestAppOptions {
  /** Reuse a store (a second replica over the same database); it is not destroyed by close then. */
  store?: TestStore;
  secretKey?: Buffer;
  settings?: GatewaySettings;
  clock?: Clock;
  directory?: TestDirectory;
}

/** The real app with its gateway, listening on 127.0.0.1, over a fresh store and a test machine directory. */
export async function startGatewayApp(dialect: Dialect, options: GatewayTestAppOptions = {}): Promise<GatewayTestApp> {
  const store = options.store ?? (await createTestStore(dialect));
  const base = loadConfig({
    ARK_SECRET_KEY: (options.secretKey ?? randomBytes(32)).toString('hex'),
    ARK_DATA_DIR: '/nonexistent/ark-test',
    LOG_LEVEL: 'silent',
  });
  const config: Config = { ...base, databaseUrl: dialect === 'postgres' ? store.location : null };
  const logs: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) logs.push(JSON.parse(line) as Record<string, unknown>);
      callback();
    },
  });
  const logger = pino({ level: 'debug' }, sink);
  const channel = new ChannelHandlers();
  const directory = options.directory ?? new TestDirectory();
  const metrics = createMetrics();
  const rateLimiter = new MemoryRateLimiter();
  const clock = options.clock ?? systemClock;
  const mailer = { send: async () => {} };
  const services = buildServices({
    store,
    clock,
    config,
    mailer,
    logger,
    ...serviceAdapters(config, clock),
    readinessProbes: fakeReadinessProbes(clock),
    x402Chain: null,
    walletCode: null,
  });
  // On PostgreSQL each replica holds its own LISTEN connection and claim locks, as `ark-cp serve` does (runtime.ts).
  const replicas = replicaAdapters(store, config.databaseUrl);
  const { app, gateway, ctx } = await assembleApp(
    {
      config,
      store,
      clock,
      mailer,
      rateLimiter,
      authenticator: { authenticate: async () => null },
      metrics,
      channel,
      services,
      ...replicas,
      gateway: { directory, ...options.settings },
    },
    { logger },
  );
  const baseUrl = await app.listen({ host: '127.0.0.1', port: 0 });
  const identity = await ctx.channelIdentity();
  return {
    app,
    gateway,
    store,
    config,
    metrics,
    channel,
    directory,
    logs,
    baseUrl,
    controlPlanePublicKey: identity.publicKeyBase64,
    async close() {
      await app.close();
      await services.close().catch((error: unknown) => logger.error({ err: error }, 'heartbeat flush on close failed'));
      await replicas.claimLocks.close();
      await rateLimiter.close();
      if (!options.store) await store.destroy();
    },
  };
}

/** The value of one labelled series of a counter on the app's registry (0 when absent). */
export async function counterValue(metrics: Metrics, name: string, labels: Record<string, string>): Promise<number> {
  const metric = metrics.registry.getSingleMetric(name);
  if (!metric) return 0;
  const { values } = await metric.get();
  const match = values.find((v) => Object.entries(labels).every(([k, value]) => v.labels[k] === value));
  return match ? Number(match.value) : 0;
}

/** Another replica's handle on the same database (its own pool or SQLite connection); destroy only closes it. */
export function openReplicaStore(store: TestStore): TestStore {
  const replica =
    store.dialect === 'postgres'
      ? openStore({ databaseUrl: store.location, sqlitePath: '' })
      : openStore({ databaseUrl: null, sqlitePath: store.location, sqliteSynchronous: 'NORMAL' });
  return { ...replica, location: store.location, destroy: () => replica.close() };
}
