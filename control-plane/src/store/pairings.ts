import { randomUUID } from 'node:crypto';
import type { MachineManifest } from '@ark/shared';
import type { Selectable } from 'kysely';
import { iso } from '../clock.js';
import type { Credential } from '../domain/accounts/principal.js';
import { type Executor, fromBool, isUniqueViolation, toJson } from './db.js';
import type { EnrollmentTokensTable, PairingsTable } from './tables/hosts.js';

// Pairings (one-time codes), wrong-code misses and enrollment tokens. The codes, secrets and tokens are minted and
// their expiries decided by the use cases (services/hosting/pairing.ts, services/hosting/enrollment.ts): these
// functions store what they are given, and compare the times they are handed.

export type PairingRow = Selectable<PairingsTable>;
export type EnrollmentTokenRow = Selectable<EnrollmentTokensTable>;

export interface NewPairing {
  pollSecretHash: string;
  userCode: string;
  manifest: MachineManifest | null;
  sourceAddress: string;
  now: Date;
  expiresAt: Date;
}

/**
 * Stores a new pending pairing. Null when its code (or poll secret) is already taken (rare: 20^8 codes): the caller
 * draws again.
 */
export async function insertPairing(db: Executor, input: NewPairing): Promise<PairingRow | null> {
  const row: PairingRow = {
    id: randomUUID(),
    poll_secret_hash: input.pollSecretHash,
    user_code: input.userCode,
    state: 'pending',
    manifest: input.manifest ? toJson(input.manifest) : null,
    source_address: input.sourceAddress,
    created_at: iso(input.now),
    expires_at: iso(input.expiresAt),
    go_live: 1n,
    approver_account_id: null,
    approver_credential_kind: null,
    approver_credential_id: null,
    approved_at: null,
    consumed_at: null,
    enrollment_token_id: null,
  };
  try {
    await db.insertInto('pairings').values(row).execute();
    return row;
  } catch (error) {
    if (isUniqueViolation(error)) return null;
    throw error;
  }
}

export async function findPairing(db: Executor, id: string): Promise<PairingRow | undefined> {
  return db.selectFrom('pairings').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The pending, unexpired pairing with this canonical code. */
export async function findPendingPairingByCode(db: Executor, userCode: string, now: Date): Promise<PairingRow | undefined> {
  return db
    .selectFrom('pairings')
    .selectAll()
    .where('user_code', '=', userCode)
    .where('state', '=', 'pending')
    .where('expires_at', '>', iso(now))
    .executeTakeFirst();
}

/** pending -> approved, by compare-and-set: false when the pairing is no longer pending or has expired. */
export async function approvePairing(
  db: Executor,
  input: { id: string; approverAccountId: string; credential: Credential; goLive: boolean; now: Date },
): Promise<boolean> {
  const result = await db
    .updateTable('pairings')
    .set({
      state: 'approved',
      go_live: fromBool(input.goLive),
      approver_account_id: input.approverAccountId,
      approver_credential_kind: input.credential.kind,
      approver_credential_id: input.credential.id,
      approved_at: iso(input.now),
    })
    .where('id', '=', input.id)
    .where('state', '=', 'pending')
    .where('expires_at', '>', iso(input.now))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** approved -> consumed, by compare-and-set: exactly one poll wins and hands out the token. */
export async function consumePairing(db: Executor, input: { id: string; enrollmentTokenId: string; now: Date }): Promise<boolean> {
  const result = await db
    .updateTable('pairings')
    .set({ state: 'consumed', consumed_at: iso(input.now), enrollment_token_id: input.enrollmentTokenId })
    .where('id', '=', input.id)
    .where('state', '=', 'approved')
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

// ---- wrong-code misses (per account and per source address, sliding hour)

export const missSubjects = (accountId: string, address: string): string[] => [`account:${accountId}`, `address:${address}`];

/** The highest miss count since `since` (the start of the window) over the subjects. */
export async function recentMisses(db: Executor, subjects: string[], since: Date): Promise<number> {
  const rows = await db
    .selectFrom('pairing_misses')
    .select(['subject', (eb) => eb.fn.countAll<bigint>().as('n')])
    .where('subject', 'in', subjects)
    .where('at', '>', iso(since))
    .groupBy('subject')
    .execute();
  return rows.reduce((max, row) => Math.max(max, Number(row.n)), 0);
}

export async function recordMiss(db: Executor, subjects: string[], now: Date): Promise<void> {
  await db
    .insertInto('pairing_misses')
    .values(subjects.map((subject) => ({ id: randomUUID(), subject, at: iso(now) })))
    .execute();
}

/** Forgets misses at or before `missesUpTo` and pending pairings that expired before `pendingExpiredBefore`. */
export async function purgePairings(db: Executor, cutoffs: { missesUpTo: Date; pendingExpiredBefore: Date }): Promise<number> {
  const misses = await db.deleteFrom('pairing_misses').where('at', '<=', iso(cutoffs.missesUpTo)).executeTakeFirst();
  const pairings = await db
    .deleteFrom('pairings')
    .where('state', '=', 'pending')
    .where('expires_at', '<', iso(cutoffs.pendingExpiredBefore))
    .executeTakeFirst();
  return Number(misses.numDeletedRows) + Number(pairings.numDeletedRows);
}

// ---- enrollment tokens

export interface NewEnrollmentToken {
  id: string;
  tokenHash: string;
  accountId: string;
  pairingId: string | null;
  goLive: boolean;
  now: Date;
  expiresAt: Date;
}

export async function insertEnrollmentToken(db: Executor, input: NewEnrollmentToken): Promise<void> {
  await db
    .insertInto('enrollment_tokens')
    .values({
      id: input.id,
      token_hash: input.tokenHash,
      account_id: input.accountId,
      pairing_id: input.pairingId,
      go_live: fromBool(input.goLive),
      created_at: iso(input.now),
      expires_at: iso(input.expiresAt),
      consumed_at: null,
      machine_id: null,
    })
    .execute();
}

export async function findEnrollmentToken(db: Executor, id: string): Promise<EnrollmentTokenRow | undefined> {
  return db.selectFrom('enrollment_tokens').selectAll().where('id', '=', id).executeTakeFirst();
}

export type ConsumeTokenResult =
  | { ok: true; row: EnrollmentTokenRow }
  | { ok: false; reason: 'ENROLLMENT_TOKEN_USED' | 'ENROLLMENT_TOKEN_INVALID' };

/**
 * Uses a token, named by its hash, once: the compare-and-set on consumed_at means two enrollments with one token never
 * both win.
 */
export async function consumeEnrollmentToken(
  db: Executor,
  input: { tokenHash: string; machineId: string; now: Date },
): Promise<ConsumeTokenResult> {
  const hash = input.tokenHash;
  const result = await db
    .updateTable('enrollment_tokens')
    .set({ consumed_at: iso(input.now), machine_id: input.machineId })
    .where('token_hash', '=', hash)
    .where('consumed_at', 'is', null)
    .where('expires_at', '>', iso(input.now))
    .executeTakeFirst();
  const row = await db.selectFrom('enrollment_tokens').selectAll().where('token_hash', '=', hash).executeTakeFirst();
  if (Number(result.numUpdatedRows) === 1 && row) return { ok: true, row };
  if (row && row.consumed_at !== null) return { ok: false, reason: 'ENROLLMENT_TOKEN_USED' };
  return { ok: false, reason: 'ENROLLMENT_TOKEN_INVALID' };
}
