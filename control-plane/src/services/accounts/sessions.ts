import { normalizeEmail } from '../../domain/accounts/account.js';
import { burnPasswordCheck, verifyPassword } from '../../domain/accounts/password.js';
import type { Principal } from '../../domain/accounts/principal.js';
import { DomainError } from '../../errors.js';
import { findAccountByEmail } from '../../store/accounts.js';
import { revokeSession } from '../../store/accounts-credentials.js';
import { issueSession } from './credentials.js';
import type { AccountDeps } from './deps.js';

/** Sign-in with email and password: a new session token, shown once. */
export async function signIn(deps: AccountDeps, input: { email: string; password: string }): Promise<{ token: string; expiresAt: string }> {
  const account = await findAccountByEmail(deps.store.db, normalizeEmail(input.email));
  // Unknown email and wrong password cost the same and answer the same, so sign-in does not enumerate accounts.
  const ok = account?.password_hash ? await verifyPassword(input.password, account.password_hash) : await burnPasswordCheck(input.password);
  if (!account || !ok) throw new DomainError('INVALID_CREDENTIALS');
  const { token, row } = await issueSession(deps.store.db, account.id, deps.clock.now(), deps.settings.sessionTtlMs);
  return { token, expiresAt: row.expires_at };
}

/** Sign-out: revokes the session that made the request. */
export async function signOut(deps: AccountDeps, principal: Principal): Promise<void> {
  await revokeSession(deps.store.db, principal.credentialId, deps.clock.now());
}
