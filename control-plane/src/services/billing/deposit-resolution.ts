import type { DepositState } from '../../domain/payments/deposits.js';
import type { WithdrawalState } from '../../domain/withdrawals/states.js';

/** An operator's decision on a HELD deposit: credit it over the cap, or send it back to its sender. */
export interface DepositResolutionInput {
  depositId: string;
  /** The admin deciding it (audited as the actor). */
  adminAccountId: string;
  /** Why (audited, and kept on the deposit). */
  reason: string;
}

export interface DepositResolutionResult {
  depositId: string;
  action: 'credit' | 'refund';
  state: DepositState;
  amountMicro: bigint;
  refund: { id: string; to: string; state: WithdrawalState } | null;
  /** True when the deposit had already ended this way: a repeat changes nothing and answers the same. */
  already: boolean;
}
