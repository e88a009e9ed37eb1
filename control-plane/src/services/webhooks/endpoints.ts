import { randomUUID } from 'node:crypto';
import { WEBHOOK_ENDPOINTS_MAX, type WebhookEventType } from '@ark/shared';
import { iso } from '../../clock.js';
import { newWebhookSecret } from '../../domain/webhooks/signing.js';
import { DomainError } from '../../errors.js';
import { appendAudit } from '../../store/audit.js';
import type { KeysetPosition } from '../../store/keyset.js';
import { type CommitHook, transact } from '../../store/transaction.js';
import {
  countLiveWebhookEndpoints,
  insertWebhookEndpoint,
  listWebhookEndpoints,
  removeWebhookEndpoint,
  updateWebhookEndpoint,
  type WebhookEndpointRow,
} from '../../store/webhooks.js';
import { allowedAddresses } from './address-check.js';
import { lockedEndpoint } from './deliveries.js';
import { type WebhookDeps, webhookSecretContext } from './deps.js';

/** An endpoint with its secret, as shown once. */
export interface CreatedEndpoint {
  row: WebhookEndpointRow;
  secret: string;
}

/** Registers an endpoint (its URL checked: https, public addresses) with a fresh secret; audited. */
export async function createWebhookEndpoint(
  deps: WebhookDeps,
  input: { accountId: string; url: string; description: string | null; eventTypes: readonly WebhookEventType[] },
  commit?: CommitHook<CreatedEndpoint>,
): Promise<CreatedEndpoint> {
  await allowedAddresses(input.url, deps.settings.allowPrivate, deps.resolve);
  const now = deps.clock.now();
  const id = randomUUID();
  const secret = newWebhookSecret();
  const secretSealed = deps.box.seal(secret, webhookSecretContext(id));
  return transact(
    deps.store,
    async (trx) => {
      if ((await countLiveWebhookEndpoints(trx, input.accountId)) >= WEBHOOK_ENDPOINTS_MAX)
        throw new DomainError('WEBHOOK_ENDPOINT_LIMIT_REACHED');
      const row = await insertWebhookEndpoint(trx, { id, ...input, secretSealed, now });
      await appendAudit(trx, {
        at: now,
        actorAccountId: input.accountId,
        action: 'webhook.created',
        subject: id,
        detail: { url: input.url },
      });
      return { row, secret };
    },
    commit,
  );
}

export function listAccountWebhookEndpoints(
  deps: WebhookDeps,
  accountId: string,
  after: KeysetPosition | null,
  fetch: number,
): Promise<WebhookEndpointRow[]> {
  return listWebhookEndpoints(deps.store.db, accountId, after, fetch);
}

/** Removes an endpoint; what it was still owed is dropped. NOT_FOUND when the account has no such live one. */
export async function removeAccountWebhookEndpoint(deps: WebhookDeps, accountId: string, id: string): Promise<void> {
  const now = deps.clock.now();
  const removed = await transact(deps.store, async (trx) => {
    if (!(await removeWebhookEndpoint(trx, accountId, id, now))) return false;
    await appendAudit(trx, { at: now, actorAccountId: accountId, action: 'webhook.removed', subject: id });
    return true;
  });
  if (!removed) throw new DomainError('NOT_FOUND', 'No webhook endpoint of yours has this id.');
}

export interface RotatedSecret {
  id: string;
  secret: string;
  previousSecretExpiresAt: Date;
}

/**
 * A new secret for the endpoint, shown once. The one it replaces keeps signing beside it (two signatures on every
 * delivery) for a day, so the receiver can switch without dropping a delivery. Audited.
 */
export function rotateWebhookSecret(
  deps: WebhookDeps,
  input: { accountId: string; id: string },
  commit?: CommitHook<RotatedSecret>,
): Promise<RotatedSecret> {
  const now = deps.clock.now();
  const secret = newWebhookSecret();
  const previousSecretExpiresAt = new Date(now.getTime() + deps.settings.previousSecretTtlMs);
  return transact(
    deps.store,
    async (trx) => {
      const endpoint = await lockedEndpoint(trx, input);
      const context = webhookSecretContext(endpoint.id);
      await updateWebhookEndpoint(trx, endpoint.id, {
        secret_sealed: deps.box.seal(secret, context),
        previous_secret_sealed: endpoint.secret_sealed,
        previous_secret_expires_at: iso(previousSecretExpiresAt),
        updated_at: iso(now),
      });
      await appendAudit(trx, { at: now, actorAccountId: input.accountId, action: 'webhook.secret_rotated', subject: endpoint.id });
      return { id: endpoint.id, secret, previousSecretExpiresAt };
    },
    commit,
  );
}

/** The secrets that sign a delivery now: the current one, and the rotated-out one while it lasts. */
export function liveSecretsOf(deps: WebhookDeps, endpoint: WebhookEndpointRow, now: Date): string[] {
  const context = webhookSecretContext(endpoint.id);
  const secrets = [deps.box.open(endpoint.secret_sealed, context)];
  const previousUntil = endpoint.previous_secret_expires_at;
  if (endpoint.previous_secret_sealed !== null && previousUntil !== null && new Date(previousUntil).getTime() > now.getTime()) {
    secrets.push(deps.box.open(endpoint.previous_secret_sealed, context));
  }
  return secrets;
}
