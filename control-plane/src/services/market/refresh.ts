import { marketSnapshot } from '../../domain/market/stats.js';
import { loadMarketMachines, replaceMarketStats } from '../../store/market.js';
import type { MarketDeps } from './deps.js';

/**
 * The worker's step: loads the market's history once and stores every GPU model's bucket for each window of
 * 1..365 days ending now, gated by the minimum sample size before anything is written. Returns the buckets stored.
 */
export async function refreshMarketStats(deps: MarketDeps): Promise<number> {
  const now = deps.clock.now();
  const machines = await loadMarketMachines(deps.store.db);
  const rows = marketSnapshot(machines, now.getTime(), deps.minSampleSize);
  await replaceMarketStats(deps.store, { computedAt: now, minSampleSize: deps.minSampleSize, rows });
  return rows.length;
}
