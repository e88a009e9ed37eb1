import { marketSnapshot, yourRateSteps } from '../../domain/market/stats.js';
import { loadMarketMachines, replaceMarketStats } from '../../store/market.js';
import type { MarketDeps } from './deps.js';

/**
 * The worker's step: loads the market's history once and stores every GPU model's bucket for each window of
 * 1..365 days ending now (and each host's own median rate, as change points), gated by the minimum sample size before anything is written. Returns the buckets stored.
 */
export async function refreshMarketStats(deps: MarketDeps): Promise<number> {
  const now = deps.clock.now();
  const { machines, owners } = await loadMarketMachines(deps.store.db);
  const rows = marketSnapshot(machines, now.getTime(), deps.minSampleSize);
  const hostRates = [...owners].flatMap(([accountId, models]) =>
    [...models].flatMap(([gpuModel, own]) => yourRateSteps(own, now.getTime()).map((step) => ({ accountId, gpuModel, ...step }))),
  );
  await replaceMarketStats(deps.store, { computedAt: now, minSampleSize: deps.minSampleSize, rows, hostRates });
  return rows.length;
}
