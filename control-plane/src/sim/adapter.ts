import type { Role } from '../domain/accounts/principal.js';
import { type WithdrawalBalance, withdrawalKindOf } from '../domain/withdrawals/states.js';
import type { WithdrawalRequestInput } from '../services/withdrawals/request.js';
import type { DepositRow } from '../store/deposits.js';
import type { World } from './world.js';

// Where the simulator meets an API that issue 22's fixes changed. The simulator drives the services, not HTTP, so
// what a route decides before it calls its use case is reproduced here, in one place each, and nowhere else. To
// check a tree without a fix (how the defects were found), put back what that route did: the comments say what.

/** The balance an account asks to take out: `available` leaves as a withdrawal, `payable` as a payout. */
export type Balance = WithdrawalBalance;

/**
 * The request `POST /api/v1/withdrawals` makes for an account that asks for its `balance`: the body names the
 * balance and the route maps it to the kind (`withdrawalKindOf`). Before defect 1's fix the route decided by the
 * sign-up role instead (`role === 'host' ? 'payout' : 'withdrawal'`), whatever was asked.
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
 * The operator acts on a HELD deposit (defect 3's fix: `POST /api/v1/admin/deposits/{id}/credit` and `/refund`, the
 * console's held deposits page, `ark-cp deposits credit|refund`). A refund is a `refund` request the payer pays to the
 * deposit's sender, like a payout. Answers false where a tree has no such action (before the fix: no way home).
 */
export async function operatorResolvesHeldDeposit(
  world: World,
  input: { depositId: string; adminAccountId: string; action: HeldDepositAction },
): Promise<boolean> {
  const decision = { depositId: input.depositId, adminAccountId: input.adminAccountId, reason: `sim operator ${input.action}` };
  if (input.action === 'credit') await world.services.deposits.credit(decision);
  else await world.services.deposits.refund(decision);
  return true;
}

/** What a recorded deposit has become, as far as the account's money goes. */
export type DepositStanding = 'credited' | 'held' | 'below_minimum' | 'seen' | 'refunding' | 'refunded';

/** A stored deposit's standing: CREDITED (by the watcher, or an operator's override), HELD, BELOW_MINIMUM, ... */
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
    case 'REFUNDING':
      return 'refunding';
    case 'REFUNDED':
      return 'refunded';
  }
}
