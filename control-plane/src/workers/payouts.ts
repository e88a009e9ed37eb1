import { Gauge, type Registry } from 'prom-client';
import type { PayoutWallet } from '../chain/payout-wallet.js';
import type { PayoutsConfig } from '../config/payouts.js';
import type { Faults } from '../faults.js';
import type { AlertSink } from '../services/alerts/sink.js';
import type { WithdrawalServices } from '../services/withdrawals/index.js';
import type { Worker } from './runner.js';

export interface PayoutLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/**
 * The payer as a worker (none without a payout wallet: requests then wait, locked). Every replica runs it; the lease
 * in the store lets one pay at a time. Gauges: the low-funds alert and the requests the wallet still owes. The payer's
 * named fault points go to `faults` (faults.ts: a test facility, off unless a test sets it).
 */
export function payoutWorker(input: {
  withdrawals: WithdrawalServices;
  wallet: PayoutWallet | null;
  payouts: PayoutsConfig;
  registry: Registry;
  logger: PayoutLogger;
  /** Where the low-funds alert goes besides the log and the gauge (ARK_ALERT_WEBHOOK_URL). */
  alerts: AlertSink;
  faults: Faults;
}): { workers: Worker[]; stop(): Promise<void> } {
  const { wallet } = input;
  if (wallet === null) return { workers: [], stop: async () => {} };
  const lowFunds = new Gauge({
    name: 'ark_payout_wallet_low_funds',
    help: '1 while the payout wallet lacks USDC or gas for the next withdrawal or payout (requests wait)',
    registers: [input.registry],
  });
  const pending = new Gauge({
    name: 'ark_payout_pending_requests',
    help: 'Withdrawals and payouts approved or in flight and not final yet',
    registers: [input.registry],
  });
  let firing = false;
  const payer = input.withdrawals.payer(wallet, {
    lowFunds: (low, detail) => {
      lowFunds.set(low ? 1 : 0);
      if (low === firing) return;
      firing = low;
      const text = low
        ? `payout wallet ${wallet.address} lacks funds: needs ${detail.needMicro} micro-USDC, holds ${detail.haveMicro}; gas ${detail.nativeWei} wei`
        : `payout wallet ${wallet.address} has funds again`;
      if (low) input.logger.warn({ alert: 'payout_wallet_low_funds', ...stringify(detail) }, text);
      else input.logger.info({ alert: 'payout_wallet_low_funds' }, text);
      const sent = input.alerts.send({
        name: 'payout_wallet_low_funds',
        severity: low ? 'critical' : 'info',
        summary: text,
        details: { wallet: wallet.address, firing: low, ...stringify(detail) },
      });
      // A failed delivery is logged, never thrown: the log line and the gauge already carry the alert.
      void sent.then((d) => {
        if (!d.delivered && input.alerts.target !== null)
          input.logger.warn({ alert: 'payout_wallet_low_funds', detail: d.detail }, 'alert not delivered to the alert sink');
      });
    },
    warn: (obj, msg) => input.logger.warn(obj, msg),
    info: (obj, msg) => input.logger.info(obj, msg),
    fault: (point) => input.faults.reached(point),
  });
  return {
    workers: [
      {
        name: 'payouts',
        intervalMs: input.payouts.pollIntervalMs,
        step: async () => {
          const r = await payer.step();
          const owed = await input.withdrawals.pending();
          if (owed) pending.set(Number(owed.count));
          return r.held + r.signed + r.broadcast + r.confirmed + r.failed + r.replaced;
        },
      },
    ],
    async stop() {
      await payer.stop().catch(() => {});
    },
  };
}

function stringify(detail: Record<string, bigint>): Record<string, string> {
  return Object.fromEntries(Object.entries(detail).map(([k, v]) => [k, v.toString()]));
}
