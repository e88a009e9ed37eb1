import type { Clock } from '../../clock.js';
import type { Store } from '../../store/db.js';

export interface AdmissionDeps {
  store: Store;
  clock: Clock;
  /** Credits HELD deposits that may be credited now (services/billing/deposit-credit.ts); answers how many. */
  releaseHeldDeposits(): Promise<number>;
}
