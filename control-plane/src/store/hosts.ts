import { iso } from '../clock.js';
import type { Credential } from '../domain/accounts/principal.js';
import { type HostingFacts, isNewHost } from '../domain/pairing/hosting-rules.js';
import { type Executor, fromBool, toBool } from './db.js';

// Host profiles: hosting on at first use, the admin block, and the grants the new-host cap counts.

/** Whether hosting is on for the account (the Account view's `host_enabled`). */
export async function isHostEnabled(db: Executor, accountId: string): Promise<boolean> {
  const row = await db
    .selectFrom('accounts')
    .leftJoin('host_profiles', 'host_profiles.account_id', 'accounts.id')
    .select(['accounts.host_enabled', 'host_profiles.hosting_enabled'])
    .where('accounts.id', '=', accountId)
    .executeTakeFirst();
  return row !== undefined && (toBool(row.host_enabled) || toBool(row.hosting_enabled));
}

/** First use turns hosting on: the profile starts its first-day window and the account shows host_enabled. */
export async function turnHostingOn(db: Executor, accountId: string, now: Date): Promise<void> {
  await db
    .insertInto('host_profiles')
    .values({
      account_id: accountId,
      hosting_enabled: 1n,
      hosting_blocked: 0n,
      hosting_started_at: iso(now),
      created_at: iso(now),
      updated_at: iso(now),
    })
    .onConflict((oc) =>
      oc.column('account_id').doUpdateSet((eb) => ({
        hosting_enabled: 1n,
        hosting_started_at: eb.fn.coalesce('host_profiles.hosting_started_at', eb.val(iso(now))),
        updated_at: iso(now),
      })),
    )
    .execute();
  await db
    .updateTable('accounts')
    .set({ host_enabled: 1n, updated_at: iso(now) })
    .where('id', '=', accountId)
    .where('host_enabled', '=', 0n)
    .execute();
}

/** The admin block: refuses new machines and offer commits. */
export async function setHostingBlocked(db: Executor, accountId: string, blocked: boolean, now: Date): Promise<void> {
  await db
    .insertInto('host_profiles')
    .values({
      account_id: accountId,
      hosting_enabled: 0n,
      hosting_blocked: fromBool(blocked),
      hosting_started_at: null,
      created_at: iso(now),
      updated_at: iso(now),
    })
    .onConflict((oc) => oc.column('account_id').doUpdateSet({ hosting_blocked: fromBool(blocked), updated_at: iso(now) }))
    .execute();
}

export async function isHostingBlocked(db: Executor, accountId: string): Promise<boolean> {
  const row = await db.selectFrom('host_profiles').select('hosting_blocked').where('account_id', '=', accountId).executeTakeFirst();
  return row !== undefined && toBool(row.hosting_blocked);
}

/**
 * Machines granted since `since`: enrollment tokens used or still usable (a pairing's token included), plus
 * approved pairings whose token is not out yet. An expired, unused token frees its place.
 */
export async function countGrantsSince(
  db: Executor,
  accountId: string,
  since: Date,
  now: Date,
  excludePairingId: string | null,
): Promise<number> {
  const tokens = await db
    .selectFrom('enrollment_tokens')
    .select((eb) => eb.fn.countAll<bigint>().as('n'))
    .where('account_id', '=', accountId)
    .where('created_at', '>=', iso(since))
    .where((eb) => eb.or([eb('consumed_at', 'is not', null), eb('expires_at', '>', iso(now))]))
    .executeTakeFirstOrThrow();
  let pairings = db
    .selectFrom('pairings')
    .select((eb) => eb.fn.countAll<bigint>().as('n'))
    .where('approver_account_id', '=', accountId)
    .where('state', '=', 'approved')
    .where('approved_at', '>=', iso(since));
  if (excludePairingId !== null) pairings = pairings.where('id', '!=', excludePairingId);
  const approved = await pairings.executeTakeFirstOrThrow();
  return Number(tokens.n) + Number(approved.n);
}

/**
 * Everything the hosting rules look at, read now. `credential` is the one acting (or the pairing's approver);
 * `excludePairingId` leaves out the pairing being handed out, which already counts as a grant.
 */
export async function readHostingFacts(
  db: Executor,
  input: { accountId: string; credential: Credential | null; now: Date; excludePairingId?: string | null },
): Promise<HostingFacts> {
  const { accountId, now } = input;
  const account = await db
    .selectFrom('accounts')
    .leftJoin('host_profiles', 'host_profiles.account_id', 'accounts.id')
    .select(['accounts.email_verified_at', 'host_profiles.hosting_blocked', 'host_profiles.hosting_started_at'])
    .where('accounts.id', '=', accountId)
    .executeTakeFirst();
  if (!account) return { emailVerified: false, hasHostScope: false, blocked: true, hostingStartedAt: null, grantsSinceStart: 0 };
  const startedAt = account.hosting_started_at ? new Date(account.hosting_started_at) : null;
  const grants = isNewHost(startedAt, now)
    ? await countGrantsSince(db, accountId, startedAt ?? new Date(0), now, input.excludePairingId ?? null)
    : 0;
  return {
    emailVerified: account.email_verified_at !== null,
    hasHostScope: await credentialHasHostScope(db, accountId, input.credential, now),
    blocked: toBool(account.hosting_blocked),
    hostingStartedAt: startedAt,
    grantsSinceStart: grants,
  };
}

/**
 * The credential that acts (or approved a pairing): a session always has the host scope; an API key must carry it
 * and still be usable (not revoked or expired).
 */
async function credentialHasHostScope(db: Executor, accountId: string, credential: Credential | null, now: Date): Promise<boolean> {
  if (credential === null) return false;
  if (credential.kind === 'session') return true;
  const key = await db
    .selectFrom('api_keys')
    .select(['scopes', 'revoked_at', 'expires_at'])
    .where('id', '=', credential.id)
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  if (!key || key.revoked_at !== null || (key.expires_at !== null && key.expires_at <= iso(now))) return false;
  return key.scopes.split(',').includes('host');
}
