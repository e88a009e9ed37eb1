import type { Clock } from '../../clock.js';
import type { PaymentsConfig } from '../../config/payments.js';
import type { PayoutsConfig } from '../../config/payouts.js';
import type { ChainAsset, ChainNetwork } from '../../domain/payments/chains.js';
import type { Store, Tx } from '../../store/db.js';

/** The paid-admission check a request passes in its own transaction (the shared guard, when admissions exist). */
export type AdmitWithdrawal = (
  trx: Tx,
  request: { accountId: string; kind: 'withdrawal' | 'payout'; authorization: string | null; reference: string },
) => Promise<unknown>;

export interface WithdrawalDeps {
  store: Store;
  clock: Clock;
  payments: PaymentsConfig;
  payouts: PayoutsConfig;
  /** Absent: admissions are always open. */
  admit?: AdmitWithdrawal;
}

/** Where money goes out: the primary network and its USDC, or null when ARK_CHAINS names none. */
export function payoutRail(deps: Pick<WithdrawalDeps, 'payments'>): { network: ChainNetwork; usdc: ChainAsset } | null {
  const network = deps.payments.chains?.networks[0];
  // Micro-USDC are the token's own units only at six decimals (USDC on every network we pay on).
  const usdc = network?.assets.find((a) => a.symbol === 'USDC' && a.decimals === 6);
  return network && usdc ? { network, usdc } : null;
}
