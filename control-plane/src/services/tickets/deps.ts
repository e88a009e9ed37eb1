import type { Clock } from '../../clock.js';
import type { Store } from '../../store/db.js';

/** What every ticket use case is given: built once in buildTicketServices. */
export interface TicketDeps {
  store: Store;
  clock: Clock;
}
