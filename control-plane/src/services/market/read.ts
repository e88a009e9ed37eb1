import { type MarketBucket, sizeOnly, windowStart } from '../../domain/market/stats.js';
import { readHostRates, readMarketSnapshot, readMarketStats } from '../../store/market.js';
import type { MarketDeps } from './deps.js';
import { refreshMarketStats } from './refresh.js';

export interface MarketView {
  windowDays: number;
  from: Date;
  to: Date;
  minSampleSize: number;
  models: Array<MarketBucket & { yourRateMicro: bigint | null }>;
}

/**
 * The market as of the worker's last snapshot (computed once here when there is none yet), for one window, one
 * model when given: the stored buckets plus the caller's own median listed rate where the bucket is reported.
 */
export async function readMarket(deps: MarketDeps, accountId: string, windowDays: number, gpuModel?: string): Promise<MarketView> {
  let snapshot = await readMarketSnapshot(deps.store.db);
  if (!snapshot) {
    await refreshMarketStats(deps);
    snapshot = await readMarketSnapshot(deps.store.db);
    if (!snapshot) throw new Error('the market snapshot was not stored');
  }
  const to = Date.parse(snapshot.computedAt);
  const from = windowStart(to, windowDays);
  const buckets = await readMarketStats(deps.store.db, windowDays, gpuModel);
  if (gpuModel !== undefined && buckets.length === 0) {
    buckets.push(sizeOnly(gpuModel, 0));
  }
  const own = buckets.some((b) => b.rate !== null)
    ? await readHostRates(deps.store.db, accountId, windowDays)
    : new Map<string, bigint | null>();
  return {
    windowDays,
    from: new Date(from),
    to: new Date(to),
    minSampleSize: snapshot.minSampleSize,
    models: buckets.map((b) => ({ ...b, yourRateMicro: b.rate === null ? null : (own.get(b.gpuModel) ?? null) })),
  };
}
