import type { ApiKeyScope } from '@ark/shared';
import { mintApiKey, mintSessionToken, sessionExpiry } from '../../domain/accounts/tokens.js';
import type { Executor } from '../../store/db.js';
import { type ApiKeyRow, insertApiKey, insertSession } from '../../store/accounts-credentials.js';

// Issuing credentials: the secret is minted and the expiry decided here; the store keeps only the hash
// (store/accounts-credentials.ts). Runs in the caller's transaction or on its own.

/** A new session: the bearer token is returned once and only its hash is stored. */
export async function issueSession(db: Executor, accountId: string, now: Date, ttlMs: number) {
  const { token, tokenHash } = mintSessionToken();
  const row = await insertSession(db, { accountId, tokenHash, now, expiresAt: sessionExpiry(now, ttlMs) });
  return { token, row };
}

/** A new API key: the secret is returned once and only its hash is stored. */
export async function issueApiKey(
  db: Executor,
  input: { accountId: string; label: string; scopes: readonly ApiKeyScope[]; expiresAt: string | null; now: Date },
): Promise<{ secret: string; row: ApiKeyRow }> {
  const { secret, prefix, secretHash } = mintApiKey();
  const row = await insertApiKey(db, { ...input, prefix, secretHash });
  return { secret, row };
}
