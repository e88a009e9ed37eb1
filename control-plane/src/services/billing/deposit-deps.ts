import type { DepositAddressDeriver } from '../../chain/hd-addresses.js';
import type { Clock } from '../../clock.js';
import type { PaymentsConfig } from '../../config-payments.js';
import type { Store } from '../../store/db.js';

export interface DepositDeps {
  store: Store;
  clock: Clock;
  payments: PaymentsConfig;
  /** Null when ARK_DEPOSIT_XPUB is unset: deposit addresses are unavailable. */
  deriver: DepositAddressDeriver | null;
}
