import { iso } from '../clock.js';
import type { Executor } from './db.js';

// TOTP columns of an account: the sealed pending seed, the sealed enabled seed, and the last step used.

export async function setPendingTotp(db: Executor, accountId: string, sealed: string, now: Date): Promise<void> {
  await db
    .updateTable('accounts')
    .set({ totp_pending_sealed: sealed, updated_at: iso(now) })
    .where('id', '=', accountId)
    .execute();
}

/** Promotes the pending seed, remembering the step of the code that proved it. */
export async function enableTotp(db: Executor, accountId: string, sealed: string, step: bigint, now: Date): Promise<boolean> {
  const result = await db
    .updateTable('accounts')
    .set({ totp_secret_sealed: sealed, totp_pending_sealed: null, totp_last_step: step, updated_at: iso(now) })
    .where('id', '=', accountId)
    .where('totp_pending_sealed', '=', sealed)
    .where('totp_secret_sealed', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Compare-and-set on the last step: of two requests with the same code, only one wins. */
export async function useTotpStep(db: Executor, accountId: string, previous: bigint | null, step: bigint): Promise<boolean> {
  const result = await db
    .updateTable('accounts')
    .set({ totp_last_step: step })
    .where('id', '=', accountId)
    .where((eb) => (previous === null ? eb('totp_last_step', 'is', null) : eb('totp_last_step', '=', previous)))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}
