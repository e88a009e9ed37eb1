import type { MarketDeps } from './deps.js';
import { readMarket } from './read.js';
import { refreshMarketStats } from './refresh.js';

/** Host market statistics (issue 10 item 1): the worker's refresh and the hosts' read. */
export function buildMarketServices(deps: MarketDeps) {
  return {
    refresh: () => refreshMarketStats(deps),
    read: (accountId: string, windowDays: number, gpuModel?: string) => readMarket(deps, accountId, windowDays, gpuModel),
  };
}

export type MarketServices = ReturnType<typeof buildMarketServices>;
