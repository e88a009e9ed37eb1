import type {
  WebhookDelivery,
  WebhookDeliveryQueued,
  WebhookEndpoint,
  WebhookEndpointCreated,
  WebhookEventType,
  WebhookSecretRotated,
} from '@ark/shared';
import type {
  NewWebhookEndpoint,
  QueuedDelivery,
  RotatedSecret,
  WebhookDeliveryRecord,
  WebhookEndpointRecord,
} from '../services/webhooks/index.js';

// Signed webhooks (issue 10) as the wire shows them (shared/src/http/webhooks.ts).

export function webhookEndpointView(e: WebhookEndpointRecord): WebhookEndpoint {
  return {
    id: e.id,
    url: e.url,
    description: e.description,
    event_types: e.eventTypes,
    state: e.state,
    disabled_reason: e.disabledReason,
    previous_secret_expires_at: e.previousSecretExpiresAt,
    created_at: e.createdAt,
  };
}

/** A new endpoint: the one answer that carries its secret. */
export const webhookEndpointCreatedView = (created: NewWebhookEndpoint): WebhookEndpointCreated => ({
  ...webhookEndpointView(created.endpoint),
  secret: created.secret,
});

export function webhookDeliveryView(d: WebhookDeliveryRecord): WebhookDelivery {
  return {
    delivery_id: d.id,
    event_id: d.eventId,
    event_type: d.eventType as WebhookEventType,
    state: d.state,
    attempts: Number(d.attempts),
    last_status: d.lastStatus === null ? null : Number(d.lastStatus),
    last_error: d.lastError,
    next_attempt_at: d.nextAttemptAt,
    delivered_at: d.deliveredAt,
    created_at: d.createdAt,
  };
}

export const webhookQueuedView = (q: QueuedDelivery): WebhookDeliveryQueued => ({ delivery_id: q.deliveryId, event_id: q.eventId });

export const webhookSecretRotatedView = (r: RotatedSecret): WebhookSecretRotated => ({
  id: r.id,
  secret: r.secret,
  previous_secret_expires_at: r.previousSecretExpiresAt.toISOString(),
});
