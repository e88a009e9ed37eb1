import type { ApiKeyScope } from '@ark/shared';
import { decodeScopes } from '../../domain/accounts/account.js';
import type { CredentialKind } from '../../domain/accounts/principal.js';
import { DomainError } from '../../errors.js';
import { type ApiKeyRow, listApiKeys, revokeApiKey } from '../../store/accounts-credentials.js';
import { issueApiKey } from './credentials.js';
import { appendAudit } from '../../store/audit.js';
import type { KeysetPosition } from '../../store/keyset.js';
import { type CommitHook, transact } from '../../store/transaction.js';
import type { AccountDeps } from './deps.js';

/**
 * Who creates a key: its holder (through a session or another key, with that credential's scopes), or the operator
 * (the CLI).
 */
export type KeyIssuer = { kind: 'holder'; via: CredentialKind; scopes: ReadonlySet<string> } | { kind: 'operator' };

export interface NewApiKeyInput {
  accountId: string;
  label: string;
  scopes: readonly ApiKeyScope[];
  /** Null: the key never expires. */
  expiresAt: Date | null;
  issuer: KeyIssuer;
}

export interface CreatedApiKey {
  row: ApiKeyRow;
  /** Shown exactly once; only its hash is stored. */
  secret: string;
}

/** Creates an API key, audited by who created it. */
export async function createApiKey(deps: AccountDeps, input: NewApiKeyInput, commit?: CommitHook<CreatedApiKey>): Promise<CreatedApiKey> {
  const now = deps.clock.now();
  const { accountId, label, scopes, issuer } = input;
  if (input.expiresAt !== null && input.expiresAt.getTime() <= now.getTime()) {
    throw new DomainError('VALIDATION_FAILED', 'body/expires_at must be in the future');
  }
  // A key never mints a broader key: a renter-only key cannot make itself a host key (no scope escalation).
  if (issuer.kind === 'holder' && issuer.via === 'api-key') {
    const beyond = scopes.filter((scope) => !issuer.scopes.has(scope));
    if (beyond.length > 0) {
      throw new DomainError('SCOPE_REQUIRED', `An API key can only create keys within its own scopes; it lacks ${beyond.join(', ')}.`);
    }
  }
  const expiresAt = input.expiresAt === null ? null : input.expiresAt.toISOString();
  return transact(
    deps.store,
    async (trx) => {
      const issued = await issueApiKey(trx, { accountId, label, scopes, expiresAt, now });
      await appendAudit(
        trx,
        issuer.kind === 'holder'
          ? {
              at: now,
              actorAccountId: accountId,
              action: 'api_key.created',
              subject: issued.row.id,
              detail: { scopes: decodeScopes(issued.row.scopes), label, via: issuer.via },
            }
          : {
              at: now,
              actorAccountId: null,
              action: 'api_key.created_by_operator',
              subject: issued.row.id,
              detail: { account_id: accountId, scopes },
            },
      );
      return issued;
    },
    commit,
  );
}

/** The account's keys that are not revoked, newest first. */
export function listAccountApiKeys(
  deps: AccountDeps,
  accountId: string,
  after: KeysetPosition | null,
  fetch: number,
): Promise<ApiKeyRow[]> {
  return listApiKeys(deps.store.db, accountId, after, fetch);
}

/** Revokes one of the account's keys (audited); NOT_FOUND for a key it does not hold. Revoking twice is fine. */
export async function revokeAccountApiKey(deps: AccountDeps, accountId: string, keyId: string): Promise<void> {
  const now = deps.clock.now();
  const found = await transact(deps.store, async (trx) => {
    if (!(await revokeApiKey(trx, accountId, keyId, now))) return false;
    await appendAudit(trx, { at: now, actorAccountId: accountId, action: 'api_key.revoked', subject: keyId });
    return true;
  });
  if (!found) throw new DomainError('NOT_FOUND', 'No such API key.');
}
