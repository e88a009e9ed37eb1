import { MarketQuery, MarketResponse } from '@ark/shared';
import { parseMarketWindow } from '../../domain/market/stats.js';
import { marketView } from '../../views/market.js';
import type { AppContext } from '../context.js';
import { principalOf } from '../auth.js';
import { withErrors } from '../schemas.js';
import type { TypedApp } from '../typed-app.js';

export function registerMarketRoutes(app: TypedApp, ctx: AppContext): void {
  const market = ctx.services.market;

  app.get(
    '/api/v1/hosts/market',
    {
      config: { auth: { scope: 'host' } },
      schema: {
        summary: 'Host market statistics',
        description:
          'Host scope. Per GPU model over the half-open UTC interval [from, to) ending at the last snapshot (computed every five minutes): ' +
          'listed machines, GPUs, utilization, fill rate, listed-rate percentiles (computed from each rate on the E24 grid, 24 steps a decade, and ' +
          'published on it), median time to first rental and your own median rate. ' +
          'Query window `<n>d`, 1..365 days (default 30d), anything else 422. A bucket under min_sample_size reports only its sample_size. ' +
          'No machine, host or offer identifier and no single host rate is returned.',
        querystring: MarketQuery,
        response: withErrors({ 200: MarketResponse }),
      },
    },
    async (request): Promise<MarketResponse> => {
      const principal = principalOf(request);
      const windowDays = parseMarketWindow(request.query.window);
      const view = await market.read(principal.accountId, windowDays, request.query.gpu_model);
      return marketView(view);
    },
  );
}
