import { iso } from '../clock.js';
import type { Executor } from './db.js';

// Email verification tokens: only the hash is stored, and each is used once.

export async function insertEmailVerification(
  db: Executor,
  input: { accountId: string; tokenHash: string; now: Date; expiresAt: Date },
): Promise<void> {
  await db
    .insertInto('email_verifications')
    .values({
      token_hash: input.tokenHash,
      account_id: input.accountId,
      created_at: iso(input.now),
      expires_at: iso(input.expiresAt),
      used_at: null,
    })
    .execute();
}

/** Uses the token once (compare-and-set on used_at); answers the account it verifies, or null. */
export async function consumeEmailVerification(db: Executor, tokenHash: string, now: Date): Promise<string | null> {
  const row = await db.selectFrom('email_verifications').selectAll().where('token_hash', '=', tokenHash).executeTakeFirst();
  if (!row || row.used_at !== null || row.expires_at <= iso(now)) return null;
  const used = await db
    .updateTable('email_verifications')
    .set({ used_at: iso(now) })
    .where('token_hash', '=', tokenHash)
    .where('used_at', 'is', null)
    .executeTakeFirst();
  return Number(used.numUpdatedRows) === 1 ? row.account_id : null;
}
