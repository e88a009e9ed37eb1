// First, before any other module loads: keeps Node's tick-object maps alive through the collections that loading
// the control plane runs (startup/keep-tick-maps.ts explains why).
import './startup/keep-tick-maps.js';
import { pino } from 'pino';
import { buildApp } from './app.js';
import { runCli } from './cli/index.js';
import { ConfigError, loadConfig } from './config/index.js';
import { startMetricsListener } from './http/metrics.js';
import { systemClock } from './clock.js';
import { createRuntime } from './runtime.js';
import { collectStartupGarbage } from './startup/collect-garbage.js';
import { defaultWorkers, startWorkers } from './workers/index.js';
import { chainWatchWorkers } from './workers/chain-watch.js';
import { payoutWorker } from './workers/payouts.js';

// The composition root: the only place that reads process.env; runtime.ts builds every real adapter from what it read.
async function main(argv: string[]): Promise<number> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`ark-cp: configuration error: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  const logger = pino({ level: config.logLevel });
  // The one real clock: every timer and reading of the time below it is this one, handed down.
  const clock = systemClock;
  return runCli(argv, {
    config,
    logger,
    clock,
    serve: async () => {
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
    },
  });
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`ark-cp: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
