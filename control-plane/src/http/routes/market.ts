import { MarketQuery, MarketResponse } from '@ark/shared';
import { iso } from '../../clock.js';
import { parseMarketWindow } from '../../domain/market/stats.js';
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
      return {
        window_days: view.windowDays,
        from: iso(view.from),
        to: iso(view.to),
        min_sample_size: view.minSampleSize,
        models: view.models.map((b) => ({
          gpu_model: b.gpuModel,
          sample_size: b.sampleSize,
          listed_gpus: b.listedGpus,
          allocated_gpus: b.allocatedGpus,
          utilization_pct: b.utilizationPct,
          fill_rate_pct: b.fillRatePct,
          rental_sample_size: b.rentalSampleSize,
          rate_micro:
            b.rate === null ? null : { p10_micro: String(b.rate.p10), median_micro: String(b.rate.median), p90_micro: String(b.rate.p90) },
          median_time_to_first_rental_s: b.medianTimeToFirstRentalS === null ? null : String(b.medianTimeToFirstRentalS),
          your_rate_micro: b.yourRateMicro === null ? null : String(b.yourRateMicro),
        })),
      };
    },
  );
}
