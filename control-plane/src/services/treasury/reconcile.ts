import { deficitAlert, type Reconciliation, reconcile, shouldAlert } from '../../domain/reconciliation/compare.js';
import { ledgerLiabilities } from '../../store/treasury.js';
import type { AlertDelivery } from '../alerts/sink.js';
import type { TreasuryDeps } from './deps.js';
import { loadOwners, type NetworkRead, readNetwork, requireChain } from './holdings.js';

/** Who asked: the worker, or an operator through `ark-cp treasury reconcile`. */
export type ReconcileTrigger = 'worker' | 'cli';

export interface ReconciliationRun {
  at: Date;
  trigger: ReconcileTrigger;
  report: Reconciliation;
  /** Addresses read per network: the treasury, payout wallets and deposit addresses, each once. */
  addresses: number;
  depositAddresses: number;
  /** Multicall3 calls over every network. */
  multicalls: number;
  durationMs: number;
  /** The deficit alert's delivery; null when none was sent (no deficit, or the same one alerted lately). */
  alert: AlertDelivery | null;
}

/** What one process remembers between runs: the last run (the Fleet page shows it) and the last alert sent. */
export interface ReconcileState {
  latest: ReconciliationRun | null;
  lastAlert: { deficitMicro: bigint; atMs: number } | null;
}

/**
 * Reads what the ledger owes, then what each network holds at its finalized block, compares them, remembers the run
 * and alerts on a deficit.
 *
 * The ledger is read first, in one statement: anything that moves between that read and the chain's moves toward a
 * surplus, never a false deficit. A deposit credited meanwhile was final, so on chain, before the credit; a payout
 * confirmed meanwhile was counted in flight (SIGNED or BROADCAST) by the ledger read; a transfer signed after the
 * ledger read cannot be final by the time the chain is read a moment later.
 */
export async function reconcileTreasury(deps: TreasuryDeps, state: ReconcileState, trigger: ReconcileTrigger): Promise<ReconciliationRun> {
  const chain = requireChain(deps);
  const started = performance.now();
  const liabilities = await ledgerLiabilities(deps.store.db);
  const owners = await loadOwners(deps, chain);
  const reads: NetworkRead[] = [];
  for (const network of deps.networks) reads.push(await readNetwork(chain.readerFor(network), network, owners));
  const report = reconcile({ liabilities, networks: reads });
  const at = deps.clock.now();

  let alert: AlertDelivery | null = null;
  const raised = deficitAlert(report);
  // An operator who runs the command is told every time; the worker repeats a standing deficit only now and then.
  if (raised && (trigger === 'cli' || shouldAlert(report, state.lastAlert, at.getTime(), deps.settings.alertRepeatMs))) {
    alert = await deps.alerts.send({ ...raised, details: { ...raised.details, trigger } });
    state.lastAlert = { deficitMicro: report.deficitMicro, atMs: at.getTime() };
    if (!alert.delivered && deps.alerts.target !== null)
      deps.logger?.warn({ alert: raised.name, detail: alert.detail }, 'alert not delivered to the alert sink');
  }
  if (report.status !== 'deficit') state.lastAlert = null;

  const run: ReconciliationRun = {
    at,
    trigger,
    report,
    addresses: owners.addresses.length,
    depositAddresses: owners.depositAddresses,
    multicalls: reads.reduce((sum, r) => sum + r.multicalls, 0),
    durationMs: Math.round(performance.now() - started),
    alert,
  };
  state.latest = run;
  return run;
}
