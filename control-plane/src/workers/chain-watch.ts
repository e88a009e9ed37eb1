import { Gauge, type Registry } from 'prom-client';
import type { ChainReader } from '../chain/reader.js';
import type { PaymentsConfig } from '../config/payments.js';
import type { ChainNetwork } from '../domain/payments/chains.js';
import type { AlertSink } from '../services/alerts/sink.js';
import type { DepositServices } from '../services/billing/deposits-index.js';
import type { Worker } from './runner.js';

export interface ChainWatchLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** Delivers a watcher's alert (logged already) to the alert sink; a failed delivery is logged, never thrown. */
async function raiseAlert(alerts: AlertSink, logger: ChainWatchLogger, obj: Record<string, unknown>, message: string): Promise<void> {
  const { alert, ...details } = obj;
  const delivery = await alerts.send({ name: String(alert), severity: 'critical', summary: message, details });
  if (!delivery.delivered && alerts.target !== null)
    logger.warn({ alert, detail: delivery.detail }, 'alert not delivered to the alert sink');
}

/**
 * One worker per watched network (none without ARK_CHAINS). Every replica runs them; the lease row in the store lets
 * exactly one work each network at a time. Gauges: head, finalized and cursor block, and the finality-stall alert.
 */
export function chainWatchWorkers(input: {
  deposits: DepositServices;
  payments: PaymentsConfig;
  readerFor: (network: ChainNetwork) => ChainReader;
  /** Where the finality-stall alert goes besides the log (ARK_ALERT_WEBHOOK_URL). */
  alerts?: AlertSink;
  registry: Registry;
  logger: ChainWatchLogger;
}): { workers: Worker[]; stop(): Promise<void> } {
  const networks = input.deposits.networks();
  if (networks.length === 0) return { workers: [], stop: async () => {} };
  const gauge = (name: string, help: string) => new Gauge({ name, help, labelNames: ['network'], registers: [input.registry] });
  const head = gauge('ark_chain_head_block', 'Latest block the deposit watcher saw, per network');
  const finalized = gauge('ark_chain_finalized_block', 'Finalized block the deposit watcher saw, per network');
  const cursor = gauge('ark_chain_cursor_block', 'Last block the deposit watcher has read, per network');
  const stalled = gauge(
    'ark_chain_finality_stalled',
    "1 while a network's finalized block has not advanced for ARK_FINALITY_STALL_ALERT_S",
  );
  const watchers = networks.map((network) =>
    input.deposits.watcher(network, input.readerFor(network), {
      events: {
        heads: (h) => {
          head.set({ network: h.network }, Number(h.head));
          finalized.set({ network: h.network }, Number(h.finalized));
          cursor.set({ network: h.network }, Number(h.cursor));
          stalled.set({ network: h.network }, h.stalled ? 1 : 0);
        },
        warn: (obj, msg) => {
          input.logger.warn(obj, msg);
          if ('alert' in obj && input.alerts) void raiseAlert(input.alerts, input.logger, obj as Record<string, unknown>, msg);
        },
        info: (obj, msg) => input.logger.info(obj, msg),
      },
    }),
  );
  return {
    workers: watchers.map((watcher) => ({
      name: `chain-watch:${watcher.network.name}`,
      intervalMs: input.payments.chainPollIntervalMs,
      // The runner logs a positive number: deposits that changed state in this step.
      step: async () => {
        const r = await watcher.step();
        return r.credited + r.held + r.belowMinimum + r.released;
      },
    })),
    async stop() {
      await Promise.all(watchers.map((w) => w.stop().catch(() => {})));
    },
  };
}
