import type { Selectable } from 'kysely';
import { iso } from '../clock.js';
import type { Executor } from './db.js';
import type { AgentChallengesTable } from './tables/agents.js';

// Issued EIP-4361 challenges. A challenge is consumed once, by a conditional UPDATE in the caller's transaction (the
// one that creates the account or records the step-up), so of two requests with the same message one wins.

export type AgentChallengeRow = Selectable<AgentChallengesTable>;

/** Expired challenges removed per issuance: the table stays bounded without a worker of its own. */
const PRUNE_BATCH = 100;

export async function insertChallenge(db: Executor, row: AgentChallengeRow): Promise<void> {
  await db.insertInto('agent_challenges').values(row).execute();
}

export function findChallenge(db: Executor, nonce: string): Promise<AgentChallengeRow | undefined> {
  return db.selectFrom('agent_challenges').selectAll().where('nonce', '=', nonce).executeTakeFirst();
}

/** Marks the challenge used if it is still unused and unexpired at `now`; false when another request got it first. */
export async function consumeChallenge(db: Executor, nonce: string, now: Date): Promise<boolean> {
  const result = await db
    .updateTable('agent_challenges')
    .set({ used_at: iso(now) })
    .where('nonce', '=', nonce)
    .where('used_at', 'is', null)
    .where('expires_at', '>', iso(now))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/**
 * Deletes up to a batch of challenges that expired before `before`. A used or expired nonce is refused by the message
 * check either way; keeping them a while only turns "not issued" into the clearer "used" or "expired".
 */
export async function pruneChallenges(db: Executor, before: Date): Promise<void> {
  const old = db
    .selectFrom('agent_challenges')
    .select('nonce')
    .where('expires_at', '<', iso(before))
    .orderBy('expires_at')
    .limit(PRUNE_BATCH);
  await db.deleteFrom('agent_challenges').where('nonce', 'in', old).execute();
}
