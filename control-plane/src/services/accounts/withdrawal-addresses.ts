import { withdrawalAddressRefusal } from '../../domain/withdrawals/addresses.js';
import { DomainError } from '../../errors.js';
import { appendAudit } from '../../store/audit.js';
import type { KeysetPosition } from '../../store/keyset.js';
import { type CommitHook, transact } from '../../store/transaction.js';
import { insertWithdrawalAddress, listWithdrawalAddresses, removeWithdrawalAddress } from '../../store/withdrawal-addresses.js';
import type { AccountDeps } from './deps.js';
import { toWithdrawalAddressRecord, type WithdrawalAddressRecord } from './records.js';

/**
 * Registers a withdrawal address (WITHDRAWAL_ADDRESS_EXISTS when the account already has it; VALIDATION_FAILED for
 * one nobody controls); audited.
 */
export function addWithdrawalAddress(
  deps: AccountDeps,
  input: { accountId: string; address: string; network: string; label: string | null },
  commit?: CommitHook<WithdrawalAddressRecord>,
): Promise<WithdrawalAddressRecord> {
  const now = deps.clock.now();
  const { accountId, address } = input;
  const refusal = withdrawalAddressRefusal(address);
  if (refusal) throw new DomainError('VALIDATION_FAILED', refusal);
  return transact(
    deps.store,
    async (trx) => {
      const inserted = await insertWithdrawalAddress(trx, { ...input, now });
      await appendAudit(trx, {
        at: now,
        actorAccountId: accountId,
        action: 'withdrawal_address.added',
        subject: inserted.id,
        detail: { address, network: inserted.network },
      });
      return toWithdrawalAddressRecord(inserted);
    },
    commit,
  );
}

/** The account's live addresses, newest first. */
export async function listAccountWithdrawalAddresses(
  deps: AccountDeps,
  accountId: string,
  after: KeysetPosition | null,
  fetch: number,
): Promise<WithdrawalAddressRecord[]> {
  return (await listWithdrawalAddresses(deps.store.db, accountId, after, fetch)).map(toWithdrawalAddressRecord);
}

/** Removes a live address (its version is bumped); NOT_FOUND when the account has no such live address. */
export async function removeAccountWithdrawalAddress(deps: AccountDeps, accountId: string, id: string): Promise<void> {
  const now = deps.clock.now();
  const removed = await transact(deps.store, async (trx) => {
    if (!(await removeWithdrawalAddress(trx, accountId, id, now))) return false;
    await appendAudit(trx, { at: now, actorAccountId: accountId, action: 'withdrawal_address.removed', subject: id });
    return true;
  });
  if (!removed) throw new DomainError('NOT_FOUND', 'No such withdrawal address.');
}
