import type { MarketResponse } from '@ark/shared';
import { iso } from '../clock.js';
import type { MarketView } from '../services/market/read.js';

// Host market statistics as the wire shows them (shared/src/http/market.ts).

export function marketView(view: MarketView): MarketResponse {
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
}
