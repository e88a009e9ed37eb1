import type { WebhookEventType } from '@ark/shared';
import type { WebhookDeliveryRow, WebhookEndpointRow } from '../../store/webhooks.js';
import type { CreatedEndpoint } from './endpoints.js';

// The webhook services' records: what routes and views see of endpoints and deliveries, never their rows (nor a
// sealed secret).

/** A registered endpoint. Times are the stored RFC 3339 text. */
export interface WebhookEndpointRecord {
  id: string;
  accountId: string;
  url: string;
  description: string | null;
  eventTypes: WebhookEventType[];
  state: WebhookEndpointRow['state'];
  disabledReason: string | null;
  /** Until when the rotated-out secret still signs beside the current one. */
  previousSecretExpiresAt: string | null;
  createdAt: string;
}

export const toWebhookEndpointRecord = (row: WebhookEndpointRow): WebhookEndpointRecord => ({
  id: row.id,
  accountId: row.account_id,
  url: row.url,
  description: row.description,
  eventTypes: JSON.parse(row.event_types) as WebhookEventType[],
  state: row.state,
  disabledReason: row.disabled_reason,
  previousSecretExpiresAt: row.previous_secret_expires_at,
  createdAt: row.created_at,
});

/** An endpoint just registered, with its `whsec_` secret: shown once. */
export interface NewWebhookEndpoint {
  endpoint: WebhookEndpointRecord;
  secret: string;
}

export const toNewWebhookEndpoint = (created: CreatedEndpoint): NewWebhookEndpoint => ({
  endpoint: toWebhookEndpointRecord(created.row),
  secret: created.secret,
});

/** One event owed to one endpoint, and how its delivery went. */
export interface WebhookDeliveryRecord {
  /** The endpoint's delivery order (creation order): the list's cursor. */
  seq: bigint;
  id: string;
  eventId: string;
  eventType: string;
  state: WebhookDeliveryRow['state'];
  attempts: bigint;
  lastStatus: bigint | null;
  lastError: string | null;
  nextAttemptAt: string | null;
  deliveredAt: string | null;
  createdAt: string;
}

export const toWebhookDeliveryRecord = (row: WebhookDeliveryRow): WebhookDeliveryRecord => ({
  seq: row.seq,
  id: row.id,
  eventId: row.event_id,
  eventType: row.event_type,
  state: row.state,
  attempts: row.attempts,
  lastStatus: row.last_status,
  lastError: row.last_error,
  nextAttemptAt: row.next_attempt_at,
  deliveredAt: row.delivered_at,
  createdAt: row.created_at,
});
