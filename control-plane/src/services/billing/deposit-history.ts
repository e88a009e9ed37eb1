import { depositsOfAccount, type DepositPosition, type DepositRow } from '../../store/deposits.js';

export type { DepositPosition };
import type { DepositDeps } from './deposit-deps.js';

/** An account's deposits, newest first, after a cursor position; `fetch` rows (a page plus one). */
export function depositHistory(deps: DepositDeps, accountId: string, after: DepositPosition | null, fetch: number): Promise<DepositRow[]> {
  return depositsOfAccount(deps.store.db, accountId, after, Math.max(1, Math.min(fetch, 101)));
}

export const depositPosition = (row: DepositRow): DepositPosition => ({ seenAt: row.seen_at, id: row.id });
