import type { Clock } from '../../clock.js';
import type { Store } from '../../store/db.js';

export interface MarketDeps {
  store: Store;
  clock: Clock;
  /** Buckets with fewer listed machines report only their sample size (ARK_MARKET_MIN_SAMPLE_SIZE). */
  minSampleSize: number;
}
