import { randomUUID } from 'node:crypto';
import type { AccountRole, ApiKeyScope } from '@ark/shared';
import SqliteDatabase from 'better-sqlite3';
import { CompiledQuery, type Selectable, sql } from 'kysely';
import { type AccountFacts, decodeScopes, encodeScopes } from '../domain/accounts/account.js';
import { apiKeyDisplayPrefix, hashToken, newApiKeySecret, newSessionToken, tokenKind } from '../domain/accounts/tokens.js';
import { DomainError } from '../errors.js';
import type { Authenticator, Principal, Scope } from '../http/principal.js';
import { type Executor, fromBool, isUniqueViolation, type Store, toBool } from './db.js';
import type { AccountsTable, ApiKeysTable, WithdrawalAddressesTable } from './tables/accounts.js';

export type AccountRow = Selectable<AccountsTable>;
export type ApiKeyRow = Selectable<ApiKeysTable>;
export type WithdrawalAddressRow = Selectable<WithdrawalAddressesTable>;
export type StepUpKind = 'password' | 'totp' | 'wallet';
export type Credential = { kind: 'session' | 'api-key'; id: string };

const iso = (date: Date): string => date.toISOString();

export function accountFacts(row: AccountRow): AccountFacts {
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    role: row.role,
    accountKind: row.account_kind,
    hostEnabled: toBool(row.host_enabled),
    emailVerified: row.email_verified_at !== null,
    totpEnabled: row.totp_secret_sealed !== null,
    hasPassword: row.password_hash !== null,
    createdAt: row.created_at,
  };
}

// ---- accounts

export interface NewAccount {
  email: string;
  passwordHash: string | null;
  name: string | null;
  role: AccountRole;
  accountKind?: 'human' | 'agent';
  emailVerified: boolean;
  now: Date;
}

/** Inserts an account; a taken (canonical) email is EMAIL_TAKEN. */
export async function insertAccount(db: Executor, account: NewAccount): Promise<AccountRow> {
  const row: AccountRow = {
    id: randomUUID(),
    email: account.email,
    password_hash: account.passwordHash,
    name: account.name,
    role: account.role,
    account_kind: account.accountKind ?? 'human',
    host_enabled: fromBool(account.role === 'host'),
    email_verified_at: account.emailVerified ? iso(account.now) : null,
    totp_secret_sealed: null,
    totp_pending_sealed: null,
    totp_last_step: null,
    created_at: iso(account.now),
    updated_at: iso(account.now),
  };
  try {
    await db.insertInto('accounts').values(row).execute();
  } catch (error) {
    if (isUniqueViolation(error)) throw new DomainError('EMAIL_TAKEN');
    throw error;
  }
  return row;
}

export async function findAccountById(db: Executor, id: string): Promise<AccountRow | undefined> {
  return db.selectFrom('accounts').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function findAccountByEmail(db: Executor, email: string): Promise<AccountRow | undefined> {
  return db.selectFrom('accounts').selectAll().where('email', '=', email).executeTakeFirst();
}

export async function markEmailVerified(db: Executor, accountId: string, now: Date): Promise<void> {
  await db
    .updateTable('accounts')
    .set({ email_verified_at: iso(now), updated_at: iso(now) })
    .where('id', '=', accountId)
    .where('email_verified_at', 'is', null)
    .execute();
}

// ---- email verification

export async function insertEmailVerification(
  db: Executor,
  input: { accountId: string; tokenHash: string; now: Date; ttlMs: number },
): Promise<void> {
  await db
    .insertInto('email_verifications')
    .values({
      token_hash: input.tokenHash,
      account_id: input.accountId,
      created_at: iso(input.now),
      expires_at: iso(new Date(input.now.getTime() + input.ttlMs)),
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

// ---- sessions and keys

export async function insertSession(db: Executor, input: { accountId: string; tokenHash: string; now: Date; ttlMs: number }) {
  const row = {
    id: randomUUID(),
    account_id: input.accountId,
    token_hash: input.tokenHash,
    created_at: iso(input.now),
    expires_at: iso(new Date(input.now.getTime() + input.ttlMs)),
    revoked_at: null,
    step_up_method: null,
    step_up_until: null,
  };
  await db.insertInto('sessions').values(row).execute();
  return row;
}

export async function revokeSession(db: Executor, sessionId: string, now: Date): Promise<void> {
  await db
    .updateTable('sessions')
    .set({ revoked_at: iso(now) })
    .where('id', '=', sessionId)
    .where('revoked_at', 'is', null)
    .execute();
}

export interface NewApiKey {
  accountId: string;
  label: string;
  scopes: readonly ApiKeyScope[];
  prefix: string;
  secretHash: string;
  expiresAt: string | null;
  now: Date;
}

export async function insertApiKey(db: Executor, key: NewApiKey): Promise<ApiKeyRow> {
  const row: ApiKeyRow = {
    id: randomUUID(),
    account_id: key.accountId,
    label: key.label,
    scopes: encodeScopes(key.scopes),
    prefix: key.prefix,
    secret_hash: key.secretHash,
    created_at: iso(key.now),
    expires_at: key.expiresAt,
    revoked_at: null,
    last_used_at: null,
    step_up_method: null,
    step_up_until: null,
  };
  await db.insertInto('api_keys').values(row).execute();
  return row;
}

/** A new session: the bearer token is returned once and only its hash is stored. */
export async function issueSession(db: Executor, accountId: string, now: Date, ttlMs: number) {
  const token = newSessionToken();
  const row = await insertSession(db, { accountId, tokenHash: hashToken(token), now, ttlMs });
  return { token, row };
}

/** A new API key: the secret is returned once and only its hash is stored. */
export async function issueApiKey(
  db: Executor,
  input: { accountId: string; label: string; scopes: readonly ApiKeyScope[]; expiresAt: string | null; now: Date },
) {
  const secret = newApiKeySecret();
  const row = await insertApiKey(db, { ...input, prefix: apiKeyDisplayPrefix(secret), secretHash: hashToken(secret) });
  return { secret, row };
}

/** Unrevoked keys of one account, newest first, after the cursor position [created_at, id]. */
export async function listApiKeys(db: Executor, accountId: string, after: [string, string] | null, fetch: number): Promise<ApiKeyRow[]> {
  let query = db.selectFrom('api_keys').selectAll().where('account_id', '=', accountId).where('revoked_at', 'is', null);
  if (after) {
    const [createdAt, id] = after;
    query = query.where((eb) => eb.or([eb('created_at', '<', createdAt), eb.and([eb('created_at', '=', createdAt), eb('id', '<', id)])]));
  }
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(fetch).execute();
}

/** Revokes one of the account's keys. False when the account has no such key (someone else's is "no such key"). */
export async function revokeApiKey(db: Executor, accountId: string, keyId: string, now: Date): Promise<boolean> {
  const key = await db
    .selectFrom('api_keys')
    .select(['id', 'revoked_at'])
    .where('id', '=', keyId)
    .where('account_id', '=', accountId)
    .executeTakeFirst();
  if (!key) return false;
  if (key.revoked_at === null)
    await db
      .updateTable('api_keys')
      .set({ revoked_at: iso(now) })
      .where('id', '=', keyId)
      .execute();
  return true;
}

/** Records a step-up on the credential that made the request, so it stays bound to that credential. */
export async function recordStepUp(db: Executor, credential: Credential, method: StepUpKind, until: Date): Promise<void> {
  const values = { step_up_method: method, step_up_until: iso(until) };
  if (credential.kind === 'session') await db.updateTable('sessions').set(values).where('id', '=', credential.id).execute();
  else await db.updateTable('api_keys').set(values).where('id', '=', credential.id).execute();
}

// ---- TOTP

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

// ---- integrations and deletion

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

/** The account's open deletion request, created if there is none (one per account, by a partial unique index). */
export async function openDeletionRequest(db: Executor, accountId: string, now: Date) {
  const existing = await db
    .selectFrom('account_deletion_requests')
    .selectAll()
    .where('account_id', '=', accountId)
    .where('state', '=', 'PENDING')
    .executeTakeFirst();
  if (existing) return { row: existing, created: false };
  const row = { id: randomUUID(), account_id: accountId, state: 'PENDING' as const, requested_at: iso(now) };
  await db.insertInto('account_deletion_requests').values(row).execute();
  return { row, created: true };
}

// ---- withdrawal addresses

export async function insertWithdrawalAddress(
  db: Executor,
  input: { accountId: string; address: string; network: string; label: string | null; now: Date },
): Promise<WithdrawalAddressRow> {
  const row: WithdrawalAddressRow = {
    id: randomUUID(),
    account_id: input.accountId,
    address: input.address,
    address_key: input.address.toLowerCase(),
    network: input.network,
    label: input.label,
    version: 1n,
    created_at: iso(input.now),
    removed_at: null,
  };
  try {
    await db.insertInto('withdrawal_addresses').values(row).execute();
  } catch (error) {
    if (isUniqueViolation(error)) throw new DomainError('WITHDRAWAL_ADDRESS_EXISTS');
    throw error;
  }
  return row;
}

/** A live (not removed) address of the account, for the withdrawal code: pin `version` on the transfer. */
export async function findLiveWithdrawalAddress(db: Executor, accountId: string, id: string): Promise<WithdrawalAddressRow | undefined> {
  return db
    .selectFrom('withdrawal_addresses')
    .selectAll()
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .where('removed_at', 'is', null)
    .executeTakeFirst();
}

export async function listWithdrawalAddresses(db: Executor, accountId: string, after: [string, string] | null, fetch: number) {
  let query = db.selectFrom('withdrawal_addresses').selectAll().where('account_id', '=', accountId).where('removed_at', 'is', null);
  if (after) {
    const [createdAt, id] = after;
    query = query.where((eb) => eb.or([eb('created_at', '<', createdAt), eb.and([eb('created_at', '=', createdAt), eb('id', '<', id)])]));
  }
  return query.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(fetch).execute();
}

/** Marks the address removed and bumps its version in one statement; false when there is no live one. */
export async function removeWithdrawalAddress(db: Executor, accountId: string, id: string, now: Date): Promise<boolean> {
  const result = await db
    .updateTable('withdrawal_addresses')
    .set((eb) => ({ removed_at: iso(now), version: eb('version', '+', 1n) }))
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .where('removed_at', 'is', null)
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

// ---- audit (read side)

export async function listAudit(db: Executor, after: [string, string] | null, fetch: number) {
  let query = db.selectFrom('audit_log').selectAll();
  if (after) {
    const [at, id] = after;
    query = query.where((eb) => eb.or([eb('at', '<', at), eb.and([eb('at', '=', at), eb('id', '<', id)])]));
  }
  return query.orderBy('at', 'desc').orderBy('id', 'desc').limit(fetch).execute();
}

// ---- the authenticator

const SESSION_SCOPES: ReadonlySet<Scope> = new Set<Scope>(['renter', 'host']);
/** last_used_at is refreshed at most this often, so the hot path stays a single read. */
const LAST_USED_GRANULARITY_MS = 60_000;

/** The account row read while authenticating, kept on the principal (a symbol property: cheaper than a WeakMap entry). */
const ACCOUNT_ROW = Symbol('accountRow');
type PrincipalWithRow = Principal & { [ACCOUNT_ROW]?: AccountRow };

/** The account row read while authenticating this principal, so the account view needs no second query. */
export function accountOfPrincipal(principal: Principal): AccountRow | undefined {
  return (principal as PrincipalWithRow)[ACCOUNT_ROW];
}

type CredentialRow = AccountRow & {
  credential_id: string;
  credential_expires_at: string | null;
  credential_revoked_at: string | null;
  credential_step_up_method: StepUpKind | null;
  credential_step_up_until: string | null;
  credential_scopes: string | null;
  credential_last_used_at: string | null;
};

/** The two lookups as SQL text, built once by Kysely so both paths read the same columns. */
function credentialQueries(db: Store['db']) {
  const session = db
    .selectFrom('sessions')
    .innerJoin('accounts', 'accounts.id', 'sessions.account_id')
    .selectAll('accounts')
    .select([
      'sessions.id as credential_id',
      'sessions.expires_at as credential_expires_at',
      'sessions.revoked_at as credential_revoked_at',
      'sessions.step_up_method as credential_step_up_method',
      'sessions.step_up_until as credential_step_up_until',
      sql<null>`null`.as('credential_scopes'),
      sql<null>`null`.as('credential_last_used_at'),
    ])
    .where('sessions.token_hash', '=', '')
    .compile().sql;
  const apiKey = db
    .selectFrom('api_keys')
    .innerJoin('accounts', 'accounts.id', 'api_keys.account_id')
    .selectAll('accounts')
    .select([
      'api_keys.id as credential_id',
      'api_keys.expires_at as credential_expires_at',
      'api_keys.revoked_at as credential_revoked_at',
      'api_keys.step_up_method as credential_step_up_method',
      'api_keys.step_up_until as credential_step_up_until',
      'api_keys.scopes as credential_scopes',
      'api_keys.last_used_at as credential_last_used_at',
    ])
    .where('api_keys.secret_hash', '=', '')
    .compile().sql;
  return { session, apiKey };
}

/** Synchronous on SQLite (better-sqlite3 reads block anyway), a promise on Postgres. */
type Lookup = (
  kind: 'session' | 'api-key',
  hash: string,
  nowMs: number,
) => CachedCredential | undefined | Promise<CachedCredential | undefined>;
type LookupHandle = { lookup: Lookup; close(): void };

/** A credential row with what every request derives from it, decoded once (times as epoch ms). */
interface CachedCredential {
  row: CredentialRow;
  scopes: ReadonlySet<Scope>;
  revoked: boolean;
  /** Infinity when the credential never expires. */
  expiresAtMs: number;
  stepUpUntilMs: number | null;
  lastUsedMs: number | null;
  /** When it was read: entries older than CREDENTIAL_CACHE_TTL_MS are read again. */
  readAtMs: number;
}

/** Verified credentials kept in memory on SQLite (see openLookup): at most this many, for at most this long. */
const CREDENTIAL_CACHE_MAX = 4096;
const CREDENTIAL_CACHE_TTL_MS = 2_000;

const decoded = (kind: 'session' | 'api-key', row: CredentialRow, nowMs: number): CachedCredential => ({
  row,
  scopes: kind === 'session' ? SESSION_SCOPES : new Set<Scope>(decodeScopes(row.credential_scopes ?? '')),
  revoked: row.credential_revoked_at !== null,
  expiresAtMs: row.credential_expires_at === null ? Number.POSITIVE_INFINITY : Date.parse(row.credential_expires_at),
  stepUpUntilMs:
    row.credential_step_up_method === null || row.credential_step_up_until === null ? null : Date.parse(row.credential_step_up_until),
  lastUsedMs: row.credential_last_used_at === null ? null : Date.parse(row.credential_last_used_at),
  readAtMs: nowMs,
});

/**
 * On SQLite the lookup runs on a dedicated connection with statements prepared once (Kysely prepares every
 * statement anew, which costs more than the read itself), and found rows are cached: an entry is used only while
 * `PRAGMA data_version` of that connection is unchanged, i.e. while no other connection (this process's writer, the
 * CLI, anything) has committed to the file since it was read, so a revocation, step-up, verification or any other
 * write is seen by the very next request, exactly as without the cache. The check is a read transaction that reads
 * no page: a few times cheaper than the joined read and row decoding it saves. Expiry and step-up freshness are still compared with `now` on every request;
 * unknown tokens are never cached. The TTL and size bound only limit memory and how long a token's hash stays there.
 * On Postgres the lookup runs the SQL compiled once and nothing is cached: other replicas write the same rows and
 * there is no cheap way to learn of it, so a cache would let a revoked key work on until it lapsed.
 */
async function openLookup(store: Store): Promise<LookupHandle> {
  const text = credentialQueries(store.db);
  if (store.dialect === 'sqlite') {
    const list = await sql<{ name: string; file: string }>`pragma database_list`.execute(store.db);
    const file = list.rows.find((row) => row.name === 'main')?.file;
    if (file) {
      const connection = new SqliteDatabase(file, { fileMustExist: true });
      connection.defaultSafeIntegers(true);
      connection.pragma('busy_timeout = 5000');
      const statements = { session: connection.prepare(text.session), 'api-key': connection.prepare(text.apiKey) };
      const dataVersion = connection.prepare('pragma data_version').pluck();
      const cache = new Map<string, CachedCredential>();
      let cachedAtVersion: unknown = null;
      return {
        lookup: (kind, hash, nowMs) => {
          const version = dataVersion.get();
          if (version !== cachedAtVersion) {
            cache.clear();
            cachedAtVersion = version;
          }
          // The kinds live in different tables: keep their keys apart.
          const key = kind === 'session' ? `s${hash}` : `k${hash}`;
          const hit = cache.get(key);
          if (hit && nowMs >= hit.readAtMs && nowMs - hit.readAtMs < CREDENTIAL_CACHE_TTL_MS) return hit;
          if (hit) cache.delete(key);
          const row = statements[kind].get(hash) as CredentialRow | undefined;
          if (!row) return undefined;
          const entry = decoded(kind, row, nowMs);
          // Oldest first out: Maps iterate in insertion order.
          if (cache.size >= CREDENTIAL_CACHE_MAX) cache.delete(cache.keys().next().value as string);
          cache.set(key, entry);
          return entry;
        },
        close: () => connection.close(),
      };
    }
  }
  const compiled = { session: text.session, 'api-key': text.apiKey };
  return {
    lookup: async (kind, hash, nowMs) => {
      const row = (await store.db.executeQuery<CredentialRow>(CompiledQuery.raw(compiled[kind], [hash]))).rows[0];
      return row && decoded(kind, row, nowMs);
    },
    close: () => {},
  };
}

export interface AccountAuthenticator extends Authenticator {
  /** Releases the dedicated read connection (SQLite); call before closing the store. */
  close(): void;
}

/**
 * Resolves bearer tokens: `ars_` sessions and `ark_` API keys. One indexed lookup by the token's sha256 joined
 * with its account; no KDF on this path (tokens carry 256 random bits, so a plain hash is enough).
 */
export function createAccountAuthenticator(store: Store): AccountAuthenticator {
  let opening: Promise<LookupHandle> | null = null;
  let handle: LookupHandle | null = null;
  let closed = false;

  const verify = (kind: 'session' | 'api-key', found: CachedCredential | undefined, now: Date): Principal | null | Promise<Principal> => {
    const nowMs = now.getTime();
    if (!found || found.revoked || found.expiresAtMs <= nowMs) return null;
    const { row, scopes, stepUpUntilMs, lastUsedMs } = found;
    const stepUp =
      stepUpUntilMs !== null && stepUpUntilMs > nowMs
        ? { until: new Date(stepUpUntilMs), method: row.credential_step_up_method as StepUpKind }
        : null;
    const principal = principalFrom(row, kind, scopes, stepUp);
    if (kind === 'session' || (lastUsedMs !== null && lastUsedMs + LAST_USED_GRANULARITY_MS > nowMs)) return principal;
    // This commit changes data_version, so the cached row (with the old last_used_at) is dropped.
    return store.db
      .updateTable('api_keys')
      .set({ last_used_at: iso(now) })
      .where('id', '=', row.credential_id)
      .execute()
      .then(() => principal);
  };

  const resolve = (lookup: LookupHandle, kind: 'session' | 'api-key', token: string, now: Date) => {
    const found = lookup.lookup(kind, hashToken(token), now.getTime());
    return found instanceof Promise ? found.then((f) => verify(kind, f, now)) : verify(kind, found, now);
  };

  return {
    authenticate(token, now) {
      const kind = tokenKind(token);
      if (kind === null || closed) return null;
      if (handle) return resolve(handle, kind, token, now);
      opening ??= openLookup(store);
      return opening.then((opened) => {
        if (closed) return null;
        handle = opened;
        return resolve(opened, kind, token, now);
      });
    },
    close() {
      closed = true;
      opening?.then((lookup) => lookup.close()).catch(() => {});
    },
  };
}

function principalFrom(
  row: CredentialRow,
  authMethod: Principal['authMethod'],
  scopes: ReadonlySet<Scope>,
  stepUp: Principal['stepUp'],
): Principal {
  const principal: PrincipalWithRow = {
    accountId: row.id,
    role: row.role,
    authMethod,
    credentialId: row.credential_id,
    scopes,
    emailVerified: row.email_verified_at !== null,
    accountKind: row.account_kind,
    stepUp,
    [ACCOUNT_ROW]: row,
  };
  return principal;
}
