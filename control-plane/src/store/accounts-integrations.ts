import { iso } from '../clock.js';
import type { Executor } from './db.js';

// Third-party tokens of an account (the model hub's), sealed at rest: one per provider.

export async function upsertIntegration(db: Executor, accountId: string, provider: string, tokenSealed: string, now: Date): Promise<void> {
  await db
    .insertInto('account_integrations')
    .values({ account_id: accountId, provider, token_sealed: tokenSealed, created_at: iso(now), updated_at: iso(now) })
    .onConflict((oc) => oc.columns(['account_id', 'provider']).doUpdateSet({ token_sealed: tokenSealed, updated_at: iso(now) }))
    .execute();
}

export async function findIntegration(db: Executor, accountId: string, provider: string) {
  return db
    .selectFrom('account_integrations')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('provider', '=', provider)
    .executeTakeFirst();
}
