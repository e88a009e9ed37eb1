import { depositsOfAccount, type DepositPosition } from '../../store/deposits.js';
import type { DepositDeps } from './deposit-deps.js';
import { type DepositRecord, toDepositRecord } from './records.js';

export type { DepositPosition };

/** An account's deposits, newest first, after a cursor position; `fetch` of them (a page plus one). */
export async function depositHistory(
  deps: DepositDeps,
  accountId: string,
  after: DepositPosition | null,
  fetch: number,
): Promise<DepositRecord[]> {
  return (await depositsOfAccount(deps.store.db, accountId, after, Math.max(1, Math.min(fetch, 101)))).map(toDepositRecord);
}

export const depositPosition = (deposit: DepositRecord): DepositPosition => ({ seenAt: deposit.seenAt, id: deposit.id });
