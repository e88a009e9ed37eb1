import type { TreasuryAssetHoldings, TreasuryReconciliation } from '@ark/shared';
import type { AssetLine } from '../domain/reconciliation/compare.js';
import type { ReconciliationRun } from '../services/treasury/reconcile.js';

// The reconciliation of the chain with the ledger as operators read it (issue 22): `ark-cp treasury reconcile` prints
// it, GET /api/v1/admin/fleet carries the last run.

const assetView = (a: AssetLine, kind: TreasuryAssetHoldings['kind']): TreasuryAssetHoldings => ({
  symbol: a.symbol,
  kind,
  token: a.token,
  decimals: a.decimals,
  treasury_raw: a.byPlace.treasury.toString(),
  payout_wallet_raw: a.byPlace.payout_wallet.toString(),
  deposit_addresses_raw: a.byPlace.deposit_addresses.toString(),
  total_raw: a.totalRaw.toString(),
  value_micro: a.valueMicro?.toString() ?? null,
});

export function reconciliationView(run: ReconciliationRun): TreasuryReconciliation {
  const r = run.report;
  const l = r.liabilities;
  return {
    at: run.at.toISOString(),
    trigger: run.trigger,
    status: r.status,
    asset: r.asset,
    liabilities: {
      available_micro: l.availableMicro.toString(),
      held_micro: l.heldMicro.toString(),
      pending_micro: l.pendingMicro.toString(),
      payable_micro: l.payableMicro.toString(),
      locked_micro: l.lockedMicro.toString(),
      in_flight_micro: l.inFlightMicro.toString(),
      total_micro: l.totalMicro.toString(),
      owed_micro: l.owedMicro.toString(),
    },
    stablecoins_micro: r.stablecoinsMicro.toString(),
    surplus_micro: r.surplusMicro.toString(),
    deficit_micro: r.deficitMicro.toString(),
    native_value_micro: r.nativeValueMicro?.toString() ?? null,
    networks: r.networks.map((n) => ({
      network: n.network,
      chain_id: n.chainId,
      block_number: n.blockNumber.toString(),
      block_hash: n.blockHash,
      assets: [...n.stablecoins.map((a) => assetView(a, 'stablecoin')), ...(n.native ? [assetView(n.native, 'native')] : [])],
    })),
    addresses: run.addresses,
    deposit_addresses: run.depositAddresses,
    multicalls: run.multicalls,
    duration_ms: run.durationMs,
  };
}

/** `treasury reconcile`: the report, and what became of the deficit alert (sent on every deficit the command finds). */
export const reconcileReportView = (run: ReconciliationRun) => ({
  ...reconciliationView(run),
  alert: run.alert === null ? null : run.alert.delivered ? { delivered: true } : { delivered: false, detail: run.alert.detail },
});
