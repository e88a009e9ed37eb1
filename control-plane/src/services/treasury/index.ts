import type { SweepPlanDocument } from './sweep-plan.js';
import { sweepPlan } from './sweep-plan.js';
import type { TreasuryDeps } from './deps.js';
import { type ReconcileState, type ReconcileTrigger, type ReconciliationRun, reconcileTreasury } from './reconcile.js';

export type { TreasuryChain, TreasuryDeps } from './deps.js';
export type { ReconciliationRun, ReconcileTrigger } from './reconcile.js';
export type { SweepPlanDocument } from './sweep-plan.js';

/** The treasury against the ledger: reconciliation (worker and `ark-cp`), its last run, and the sweep plan. */
export interface TreasuryServices {
  /** Whether a chain is configured to reconcile against (the worker runs only then). */
  configured(): boolean;
  reconcile(trigger: ReconcileTrigger): Promise<ReconciliationRun>;
  /** This process's last run (the Fleet page); null before the first. */
  latest(): ReconciliationRun | null;
  sweepPlan(input: { minMicro: bigint; validForS: number }): Promise<SweepPlanDocument>;
}

export function buildTreasuryServices(deps: TreasuryDeps): TreasuryServices {
  const state: ReconcileState = { latest: null, lastAlert: null };
  return {
    configured: () => deps.chain !== null && deps.networks.length > 0,
    reconcile: (trigger) => reconcileTreasury(deps, state, trigger),
    latest: () => state.latest,
    sweepPlan: (input) => sweepPlan(deps, input),
  };
}
