import { createHash } from 'node:crypto';
import { SSH_KEYS_MAX } from '@ark/shared';
import { validateSshPublicKeys } from '../../domain/jobs/launch.js';
import { DomainError } from '../../errors.js';
import { appendAudit } from '../../store/audit.js';
import type { KeysetPosition } from '../../store/keyset.js';
import { countSshKeys, deleteSshKey, insertSshKey, listSshKeys, type SshKeyRow } from '../../store/ssh-keys.js';
import { type CommitHook, transact } from '../../store/transaction.js';
import type { AccountDeps } from './deps.js';

// The account's saved SSH public keys (issue 25 item 1). The key is checked as a job's keys are (domain/jobs/launch.ts).

export interface SshKeyRecord {
  id: string;
  label: string | null;
  publicKey: string;
  fingerprint: string;
  createdAt: string;
}

const toRecord = (row: SshKeyRow): SshKeyRecord => ({
  id: row.id,
  label: row.label,
  publicKey: row.public_key,
  fingerprint: row.fingerprint,
  createdAt: row.created_at,
});

/** OpenSSH's `SHA256:<base64 without padding>` of the key's blob. */
export function sshKeyFingerprint(publicKey: string): string {
  const blob = Buffer.from(publicKey.split(' ')[1] ?? '', 'base64');
  return `SHA256:${createHash('sha256').update(blob).digest('base64').replace(/=+$/, '')}`;
}

/** Saves a key (VALIDATION_FAILED for one that is not a key, SSH_KEY_EXISTS when saved already); audited. */
export function addSshKey(
  deps: AccountDeps,
  input: { accountId: string; publicKey: string; label: string | null },
  commit?: CommitHook<SshKeyRecord>,
): Promise<SshKeyRecord> {
  const now = deps.clock.now();
  let publicKey: string;
  try {
    [publicKey] = validateSshPublicKeys([input.publicKey]) as [string];
  } catch (error) {
    if (error instanceof DomainError)
      throw new DomainError(
        'VALIDATION_FAILED',
        'body/public_key must be one OpenSSH public key line, e.g. "ssh-ed25519 AAAAC3Nza... me@laptop".',
      );
    throw error;
  }
  const fingerprint = sshKeyFingerprint(publicKey);
  return transact(
    deps.store,
    async (trx) => {
      if ((await countSshKeys(trx, input.accountId)) >= SSH_KEYS_MAX)
        throw new DomainError('VALIDATION_FAILED', `An account saves at most ${SSH_KEYS_MAX} SSH keys: remove one first.`);
      const row = await insertSshKey(trx, { accountId: input.accountId, publicKey, fingerprint, label: input.label, now });
      await appendAudit(trx, {
        at: now,
        actorAccountId: input.accountId,
        action: 'ssh_key.added',
        subject: row.id,
        detail: { fingerprint },
      });
      return toRecord(row);
    },
    commit,
  );
}

export async function listAccountSshKeys(
  deps: AccountDeps,
  accountId: string,
  after: KeysetPosition | null,
  fetch: number,
): Promise<SshKeyRecord[]> {
  return (await listSshKeys(deps.store.db, accountId, after, fetch)).map(toRecord);
}

/** Removes a saved key; NOT_FOUND when the account has none by that id. */
export async function removeAccountSshKey(deps: AccountDeps, accountId: string, id: string): Promise<void> {
  const now = deps.clock.now();
  const removed = await transact(deps.store, async (trx) => {
    if (!(await deleteSshKey(trx, accountId, id))) return false;
    await appendAudit(trx, { at: now, actorAccountId: accountId, action: 'ssh_key.removed', subject: id });
    return true;
  });
  if (!removed) throw new DomainError('NOT_FOUND', 'No such SSH key.');
}
