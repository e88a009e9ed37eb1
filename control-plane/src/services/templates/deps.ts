import type { Clock } from '../../clock.js';
import type { Store } from '../../store/db.js';

export interface TemplateDeps {
  store: Store;
  clock: Clock;
}
