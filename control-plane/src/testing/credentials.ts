import { randomUUID } from 'node:crypto';
import type { ApiKeyScope } from '@ark/shared';
import { mintApiKey, mintSessionToken, sessionExpiry } from '../domain/accounts/tokens.js';
import { enrollmentTokenExpiry } from '../domain/pairing/pairing.js';
import { mintEnrollmentToken } from '../domain/pairing/secrets.js';
import { insertApiKey, insertSession } from '../store/accounts-credentials.js';
import type { Executor } from '../store/db.js';
import { insertEnrollmentToken } from '../store/pairings.js';

// Credentials for store-level tests, minted as services/accounts/credentials.ts and services/hosting/enrollment.ts mint
// them (domain) and stored by the store's own inserts, without the service layer above the store.

export async function storeSession(db: Executor, accountId: string, now: Date, ttlMs: number) {
  const { token, tokenHash } = mintSessionToken();
  const row = await insertSession(db, { accountId, tokenHash, now, expiresAt: sessionExpiry(now, ttlMs) });
  return { token, row };
}

export async function storeApiKey(
  db: Executor,
  input: { accountId: string; label: string; scopes: readonly ApiKeyScope[]; expiresAt: string | null; now: Date },
) {
  const { secret, prefix, secretHash } = mintApiKey();
  const row = await insertApiKey(db, { ...input, prefix, secretHash });
  return { secret, row };
}

/** A single-use enrollment token, minted and stored as services/hosting/enrollment.ts does. */
export async function storeEnrollmentToken(
  db: Executor,
  input: { accountId: string; pairingId: string | null; goLive: boolean; now: Date },
) {
  const { token, tokenHash } = mintEnrollmentToken();
  const id = randomUUID();
  const expiresAt = enrollmentTokenExpiry(input.now);
  await insertEnrollmentToken(db, { ...input, id, tokenHash, expiresAt });
  return { id, token, expiresAt };
}
