import type { Registry } from 'prom-client';
import type { Config } from '../config/index.js';
import type { Services } from '../services/index.js';
import type { WebhookSender } from '../services/webhooks/index.js';
import { purgeIdempotencyKeys } from '../store/idempotency.js';
import { purgeStalePairings } from '../services/hosting/pairing.js';
import type { Worker } from './runner.js';
import { earningsMaturityWorker } from './earnings.js';
import { jobWorkers } from './jobs.js';
import { marketWorker } from './market.js';
import { readinessWorker } from './readiness.js';
import { reconcileWorker } from './reconcile.js';
import { reliabilityWorker } from './reliability.js';
import { selftestWorker } from './selftest.js';
import { telemetryRetentionWorker } from './telemetry-retention.js';
import { x402Workers } from './x402.js';
import { webhookWorkers } from './webhooks.js';

export { startWorkers, type Worker, type WorkerLogger, type WorkerRunner } from './runner.js';
export { purgeTelemetry, telemetryRetentionWorker } from './telemetry-retention.js';

/**
 * Every background worker `ark-cp serve` runs, over the services and adapters the composition root built. Areas add
 * theirs here.
 */
export function defaultWorkers(
  services: Services,
  config: Config,
  deps: { registry: Registry; logger: { warn(obj: object, msg: string): void }; webhookSender: WebhookSender },
): Worker[] {
  const reconcile = reconcileWorker({
    treasury: services.treasury,
    settings: config.treasury,
    registry: deps.registry,
    logger: deps.logger,
  });
  return [
    ...jobWorkers(services.jobs.sweeps, config),
    readinessWorker(services.jobs.readiness),
    telemetryRetentionWorker,
    { name: 'pairing-purge', intervalMs: 10 * 60_000, step: (store, now) => purgeStalePairings(store.db, now) },
    { name: 'idempotency-purge', intervalMs: 60 * 60_000, step: (store, now) => purgeIdempotencyKeys(store, now) },
    ...x402Workers(services.x402, config),
    ...webhookWorkers(services.webhooks, deps.webhookSender),
    marketWorker(services.market),
    reliabilityWorker(services.reliability, config),
    selftestWorker(services.hosting, config),
    earningsMaturityWorker(services.withdrawals, config),
    ...(reconcile ? [reconcile] : []),
  ];
}
