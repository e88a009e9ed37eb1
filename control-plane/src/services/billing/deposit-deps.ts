import type { DepositAddressDeriver } from '../../chain/hd-addresses.js';
import type { Clock } from '../../clock.js';
import type { PaymentsConfig } from '../../config/payments.js';
import type { Store } from '../../store/db.js';
import type { PaidAdmissionGuard } from '../admissions/guard.js';

export interface DepositDeps {
  store: Store;
  clock: Clock;
  payments: PaymentsConfig;
  /** Null when ARK_DEPOSIT_XPUB is unset: deposit addresses are unavailable. */
  deriver: DepositAddressDeriver | null;
  /** Funding credits pass the paid-admission guard: while admission is paused a final deposit is HELD. */
  admissions: PaidAdmissionGuard;
}
