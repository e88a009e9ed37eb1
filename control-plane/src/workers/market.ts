import type { MarketServices } from '../services/market/index.js';
import type { Worker } from './runner.js';

// Host market statistics are computed here, every five minutes, into market_stats: a request only reads them.

export function marketWorker(market: MarketServices): Worker {
  return { name: 'market-stats', intervalMs: 5 * 60_000, step: () => market.refresh() };
}
