import { DomainError } from '../../errors.js';
import type { Tx } from '../../store/db.js';
import { type CommitHook, transact } from '../../store/transaction.js';
import {
  enqueueDelivery,
  findDelivery,
  findWebhookEndpoint,
  insertWebhookEvent,
  listDeliveries,
  lockWebhookEndpoint,
  newWebhookEventId,
  type WebhookDeliveryRow,
  type WebhookEndpointRow,
} from '../../store/webhooks.js';
import type { WebhookDeps } from './deps.js';

/** The account's live endpoint, locked in the caller's transaction; NOT_FOUND when there is none. */
export async function lockedEndpoint(trx: Tx, input: { accountId: string; id: string }): Promise<WebhookEndpointRow> {
  const endpoint = await lockWebhookEndpoint(trx, input.accountId, input.id);
  if (!endpoint) throw new DomainError('NOT_FOUND', 'No webhook endpoint of yours has this id.');
  return endpoint;
}

export interface QueuedDelivery {
  deliveryId: string;
  eventId: string;
}

/** Queues a `webhook.test` event to this one endpoint (whatever types it chose), delivered like any other. */
export function sendTestEvent(
  deps: WebhookDeps,
  input: { accountId: string; id: string },
  commit?: CommitHook<QueuedDelivery>,
): Promise<QueuedDelivery> {
  const now = deps.clock.now();
  return transact(
    deps.store,
    async (trx) => {
      const endpoint = await lockedEndpoint(trx, input);
      const eventId = newWebhookEventId();
      await insertWebhookEvent(trx, {
        id: eventId,
        accountId: input.accountId,
        type: 'webhook.test',
        data: { endpoint_id: endpoint.id },
        now,
      });
      const delivery = await enqueueDelivery(trx, { endpointId: endpoint.id, eventId, eventType: 'webhook.test', now });
      return { deliveryId: delivery.id, eventId };
    },
    commit,
  );
}

/**
 * Delivers an event again to the endpoint: a new delivery of the same event, so the receiver sees the same
 * `webhook-id` (and body) and can tell it is one it may have had.
 */
export function replayDelivery(
  deps: WebhookDeps,
  input: { accountId: string; id: string; deliveryId: string },
  commit?: CommitHook<QueuedDelivery>,
): Promise<QueuedDelivery> {
  const now = deps.clock.now();
  return transact(
    deps.store,
    async (trx) => {
      const endpoint = await lockedEndpoint(trx, input);
      const original = await findDelivery(trx, endpoint.id, input.deliveryId);
      if (!original) throw new DomainError('NOT_FOUND', 'No delivery of this endpoint has this id.');
      const delivery = await enqueueDelivery(trx, {
        endpointId: endpoint.id,
        eventId: original.event_id,
        eventType: original.event_type,
        now,
      });
      return { deliveryId: delivery.id, eventId: original.event_id };
    },
    commit,
  );
}

/** The endpoint's recent deliveries, newest first. */
export async function recentDeliveries(
  deps: WebhookDeps,
  input: { accountId: string; id: string; afterSeq: string | null; fetch: number },
): Promise<WebhookDeliveryRow[]> {
  const endpoint = await findWebhookEndpoint(deps.store.db, input.accountId, input.id);
  if (!endpoint) throw new DomainError('NOT_FOUND', 'No webhook endpoint of yours has this id.');
  return listDeliveries(deps.store.db, endpoint.id, input.afterSeq, input.fetch);
}
