import { randomUUID } from 'node:crypto';
import { iso } from '../../clock.js';
import { ledgerAccounts } from '../../domain/ledger/accounts.js';
import type { WithdrawalKind } from '../../domain/withdrawals/states.js';
import { DomainError, stateUnavailable } from '../../errors.js';
import { appendAudit } from '../../store/audit.js';
import { transfer } from '../../store/ledger.js';
import { type CommitHook, transact } from '../../store/transaction.js';
import { findLiveWithdrawalAddress } from '../../store/withdrawal-addresses.js';
import { insertWithdrawal, NOT_YET_PAID, type WithdrawalRow } from '../../store/withdrawals.js';
import { payoutRail, type WithdrawalDeps } from './deps.js';
import { emitWithdrawalStateChanged } from './state-events.js';

export interface WithdrawalRequestInput {
  accountId: string;
  kind: WithdrawalKind;
  amountMicro: bigint;
  withdrawalAddressId: string;
  network: string | null;
  /** An acceptance authorization presented while admissions are paused. */
  authorization: string | null;
}

/**
 * A withdrawal (available -> lock) or payout (payable -> lock) request: the amount is locked in the ledger in the
 * same transaction that records the request against the address's current version. The payer takes it from there.
 */
export function requestWithdrawal(
  deps: WithdrawalDeps,
  input: WithdrawalRequestInput,
  commit?: CommitHook<WithdrawalRow>,
): Promise<WithdrawalRow> {
  const rail = payoutRail(deps);
  if (rail === null) throw stateUnavailable('Withdrawals are not configured on this server.');
  const network = input.network ?? rail.network.name;
  if (network !== rail.network.name)
    throw new DomainError('WITHDRAWAL_NETWORK_UNSUPPORTED', `Withdrawals are paid on ${rail.network.name} only.`);
  if (input.amountMicro < deps.payouts.minMicro) {
    throw new DomainError('WITHDRAWAL_BELOW_MINIMUM', `The smallest withdrawal is ${deps.payouts.minMicro} micro.`);
  }
  const now = deps.clock.now();
  return transact(
    deps.store,
    async (trx) => {
      const address = await findLiveWithdrawalAddress(trx, input.accountId, input.withdrawalAddressId);
      if (!address) throw new DomainError('NOT_FOUND', 'No such withdrawal address.');
      if (address.network !== network) {
        throw new DomainError(
          'WITHDRAWAL_NETWORK_UNSUPPORTED',
          `The withdrawal address is registered on ${address.network}, not ${network}.`,
        );
      }
      const id = randomUUID();
      await deps.admit?.(trx, { accountId: input.accountId, kind: input.kind, authorization: input.authorization, reference: id });
      const row: WithdrawalRow = {
        id,
        account_id: input.accountId,
        kind: input.kind,
        state: 'INTENT',
        amount_micro: input.amountMicro,
        network,
        chain_id: BigInt(rail.network.chainId),
        token_address: rail.usdc.address,
        withdrawal_address_id: address.id,
        address: address.address.toLowerCase(),
        address_version: address.version,
        hold_reasons: '[]',
        approved: 0n,
        reviewed_by: null,
        reviewed_at: null,
        review_reason: null,
        ...NOT_YET_PAID,
        created_at: iso(now),
        updated_at: iso(now),
      };
      await insertWithdrawal(trx, row);
      await transfer(trx, {
        from: input.kind === 'payout' ? ledgerAccounts.payable(input.accountId) : ledgerAccounts.available(input.accountId),
        to: ledgerAccounts.lock(id, input.accountId),
        amountMicro: input.amountMicro,
        kind: input.kind === 'payout' ? 'payout_lock' : 'withdrawal_lock',
        reference: id,
        at: now,
      });
      await appendAudit(trx, {
        at: now,
        actorAccountId: input.accountId,
        action: `${input.kind}.requested`,
        subject: id,
        detail: { amount_micro: input.amountMicro.toString(), address: row.address, address_version: address.version.toString(), network },
      });
      await emitWithdrawalStateChanged(trx, row, { from: null, to: 'INTENT', txHash: null }, now);
      return row;
    },
    commit,
  );
}
