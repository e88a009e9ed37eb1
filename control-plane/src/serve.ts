import type { Logger } from 'pino';
import { buildApp } from './app.js';
import type { Clock } from './clock.js';
import type { Config } from './config/index.js';
import { startMetricsListener } from './http/metrics.js';
import { createRuntime } from './runtime.js';
import { collectStartupGarbage } from './startup/collect-garbage.js';
import { chainWatchWorkers } from './workers/chain-watch.js';
import { defaultWorkers, startWorkers } from './workers/index.js';
import { payoutWorker } from './workers/payouts.js';

/**
 * `ark-cp serve`: builds the runtime, the app and the workers, listens until SIGTERM or SIGINT, then closes each in
 * turn. main.ts imports this module only when serving, so `ark-cp --help` and the operator commands never load the
 * HTTP server, the workers or the chain clients.
 */
export async function serve(config: Config, logger: Logger, clock: Clock): Promise<number> {
  const runtime = await createRuntime(config, logger, clock);
  const app = await buildApp(runtime, { logger });
  // Schemas are compiled when the app is ready; what compiling them left is collected before the first request
  // (startup/collect-garbage.ts: the request path's objects would otherwise get a hidden class each).
  await app.ready();
  collectStartupGarbage();
  const address = await app.listen({ host: config.host, port: config.port });
  // /metrics on its own address when configured (then the API listener does not serve it).
  const metricsListener =
    config.metricsPort === null
      ? null
      : await startMetricsListener(runtime.metrics, {
          host: config.metricsHost,
          port: config.metricsPort,
          token: config.metricsToken,
          publicBaseUrl: config.publicBaseUrl,
        });
  // One deposit watcher per network in ARK_CHAINS, over the runtime's viem clients.
  const chainWatch = chainWatchWorkers({
    deposits: runtime.services.deposits,
    payments: config.payments,
    readerFor: runtime.depositReaderFor,
    alerts: runtime.services.alerts,
    registry: runtime.metrics.registry,
    logger,
  });
  // The payout wallet on the primary network (ARK_PAYOUT_KEY_FILE); without it requests wait, locked.
  const payouts = payoutWorker({
    withdrawals: runtime.services.withdrawals,
    wallet: runtime.payoutWallet,
    payouts: config.payouts,
    registry: runtime.metrics.registry,
    logger,
    alerts: runtime.services.alerts,
    faults: runtime.faults,
  });
  const workers = startWorkers({
    store: runtime.store,
    clock: runtime.clock,
    logger,
    workers: [
      ...defaultWorkers(runtime.services, config, { registry: runtime.metrics.registry, logger, webhookSender: runtime.webhookSender }),
      ...chainWatch.workers,
      ...payouts.workers,
    ],
  });
  process.stdout.write(
    `ark control plane listening on ${address} (store: ${runtime.store.dialect}${runtime.store.dialect === 'sqlite' ? `, data dir ${config.dataDir}` : ''})\n`,
  );
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
  await workers.stop();
  await chainWatch.stop();
  await payouts.stop();
  await app.close();
  await metricsListener?.close();
  await runtime.close();
  return 0;
}
