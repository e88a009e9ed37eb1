import type { Registry } from 'prom-client';
import type { TreasuryConfig } from '../config/treasury.js';
import { type TreasuryGauges, treasuryGauges } from '../http/metrics.js';
import type { ReconciliationRun, TreasuryServices } from '../services/treasury/index.js';
import type { Worker } from './runner.js';

export interface ReconcileLogger {
  warn(obj: object, msg: string): void;
}

/** Sets the gauges from a run: the surplus (negative: deficit), what is owed, holdings per place, the blocks read. */
export function recordReconciliation(gauges: TreasuryGauges, run: ReconciliationRun): void {
  const r = run.report;
  gauges.surplus.set({ asset: r.asset }, Number(r.surplusMicro));
  gauges.owed.set({ asset: r.asset }, Number(r.liabilities.owedMicro));
  for (const n of r.networks) {
    gauges.block.set({ network: n.network }, Number(n.blockNumber));
    for (const a of [...n.stablecoins, ...(n.native ? [n.native] : [])]) {
      for (const [place, raw] of Object.entries(a.byPlace)) {
        gauges.holdings.set({ network: n.network, asset: a.symbol, place }, Number(raw) / 10 ** a.decimals);
      }
    }
  }
  gauges.reconciledAt.set(run.at.getTime() / 1000);
}

/**
 * The treasury's reconciliation every ARK_RECONCILE_INTERVAL_MS (none without a chain). Every replica runs it: it only
 * reads, and each replica's Fleet page and /metrics show its own last run. A deficit is logged each run; the service
 * sends the alert (the first time, when it grows, and again after ARK_RECONCILE_ALERT_REPEAT_S).
 */
export function reconcileWorker(input: {
  treasury: TreasuryServices;
  settings: TreasuryConfig;
  registry: Registry;
  logger: ReconcileLogger;
}): Worker | null {
  if (!input.treasury.configured()) return null;
  const gauges = treasuryGauges(input.registry);
  return {
    name: 'treasury-reconcile',
    intervalMs: input.settings.reconcileIntervalMs,
    async step() {
      const run = await input.treasury.reconcile('worker');
      recordReconciliation(gauges, run);
      if (run.report.status === 'deficit') {
        input.logger.warn(
          {
            alert: 'treasury_deficit',
            deficit_micro: run.report.deficitMicro.toString(),
            owed_micro: run.report.liabilities.owedMicro.toString(),
            stablecoins_micro: run.report.stablecoinsMicro.toString(),
          },
          'the chain holds less than the ledger owes',
        );
      }
    },
  };
}
