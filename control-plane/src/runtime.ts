import { join } from 'node:path';
import { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { AppContextInput } from './app.js';
import { systemClock, type Clock } from './clock.js';
import type { Config } from './config.js';
import { createMetrics } from './http/metrics.js';
import { MemoryRateLimiter, RedisRateLimiter, type RateLimiter } from './http/rate-limit.js';
import { logMailer, smtpMailer } from './mail.js';
import { createAccountAuthenticator } from './store/accounts.js';
import { openStore, type Store } from './store/db.js';
import { migrateToLatest } from './store/migrate.js';

/** Opens the configured store (SQLite file under the data dir, or Postgres) and migrates it. */
export async function openConfiguredStore(config: Config): Promise<Store> {
  const { mkdirSync } = await import('node:fs');
  if (!config.databaseUrl) mkdirSync(config.dataDir, { recursive: true });
  const store = openStore({
    databaseUrl: config.databaseUrl,
    sqlitePath: join(config.dataDir, 'ark.sqlite'),
    sqliteSynchronous: config.sqliteSynchronous,
  });
  await migrateToLatest(store);
  return store;
}

/** The real adapters behind every AppContext field. */
export async function createRuntime(
  config: Config,
  logger: Logger,
  clock: Clock = systemClock,
): Promise<AppContextInput & { close(): Promise<void> }> {
  const store = await openConfiguredStore(config);
  const rateLimiter: RateLimiter = config.redisUrl
    ? new RedisRateLimiter(new Redis(config.redisUrl, { lazyConnect: false, maxRetriesPerRequest: 2 }))
    : new MemoryRateLimiter();
  const mailer = config.smtp.url ? smtpMailer(config.smtp.url, config.smtp.from) : logMailer((line) => logger.info(line));
  const authenticator = createAccountAuthenticator(store);
  return {
    config,
    store,
    clock,
    mailer,
    rateLimiter,
    authenticator,
    metrics: createMetrics(),
    async close() {
      authenticator.close();
      await rateLimiter.close();
      await store.close();
    },
  };
}
