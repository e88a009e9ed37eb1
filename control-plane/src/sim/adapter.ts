import type { Role } from '../domain/accounts/principal.js';
import { withdrawalKindOf } from '../domain/withdrawals/states.js';
import type { WithdrawalRequestInput } from '../services/withdrawals/request.js';
import type { DepositRow } from '../store/deposits.js';
import type { World } from './world.js';

// Where the simulator meets an API that issue 22's fixes change. The simulator drives the services, not HTTP, so
// what a route decides before it calls its use case is reproduced here, in one place each, and nowhere else.

/** The balance an account asks to take out: `available` leaves as a withdrawal, `payable` as a payout. */
export type Balance = 'available' | 'payable';

/**
 * The request `POST /api/v1/withdrawals` makes for an account that asks for its `balance`.
 *
 * The body names the balance drawn (`balance: 'available' | 'payable'`, defect 1's fix), and the route maps it to
 * the kind with `withdrawalKindOf`, as here. (Before the fix the route chose by the sign-up role: defect 1.)
 */
export function withdrawalRequest(
  account: { accountId: string; role: Role },
  balance: Balance,
  amountMicro: bigint,
  withdrawalAddressId: string,
): WithdrawalRequestInput {
  return {
    accountId: account.accountId,
    kind: withdrawalKindOf(balance),
    amountMicro,
    withdrawalAddressId,
    network: null,
    authorization: null,
  };
}

/** An operator's way home for a HELD deposit that will never fit: credit it with a recorded override, or refund it. */
export type HeldDepositAction = 'credit' | 'refund';

/**
 * The operator acts on a HELD deposit (defect 3). Answers false when this tree has no such action.
 *
 * Today there is none. WHEN THE FIX LANDS, call its use cases here (the credit audited with a reason; the refund to
 * the deposit's sender through the payout path, which the payer pays and the simulated chain records), answer true,
 * and delete 'held-deposit-operator-path' from known-defects.ts. A refund must be a row the payer pays like a
 * withdrawal (the final check matches every payout transfer on the chain to exactly one such row).
 */
export async function operatorResolvesHeldDeposit(
  world: World,
  input: { depositId: string; adminAccountId: string; action: HeldDepositAction },
): Promise<boolean> {
  void world;
  void input;
  return false;
}

/** What a recorded deposit has become, as far as the account's money goes. */
export type DepositStanding = 'credited' | 'held' | 'below_minimum' | 'seen' | 'resolved_by_operator';

/**
 * A stored deposit's standing. On this tree the state says it all; WHEN DEFECT 3'S FIX LANDS, map whatever it adds
 * here (deposits below the minimum credited together, an operator's credit or refund).
 */
export function depositStanding(row: Pick<DepositRow, 'state'>): DepositStanding {
  switch (row.state) {
    case 'CREDITED':
      return 'credited';
    case 'HELD':
      return 'held';
    case 'BELOW_MINIMUM':
      return 'below_minimum';
    case 'SEEN':
      return 'seen';
    default:
      return 'resolved_by_operator';
  }
}
