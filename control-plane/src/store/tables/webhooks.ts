import type { WebhookDeliveryState, WebhookEndpointState } from '@ark/shared';
import type { Generated } from 'kysely';

/** A URL an account asked to be told at, and which event types it wants. */
export interface WebhookEndpointsTable {
  id: string;
  account_id: string;
  url: string;
  description: string | null;
  /** JSON array of event types. */
  event_types: string;
  /** The current `whsec_` secret, sealed (domain/accounts/secret-box.ts) under `webhook:<id>`. */
  secret_sealed: string;
  /** The rotated-out secret, still signing (beside the current one) until previous_secret_expires_at. */
  previous_secret_sealed: string | null;
  previous_secret_expires_at: string | null;
  state: WebhookEndpointState;
  disabled_reason: string | null;
  /** The first failed attempt since the last success: past the disable window the endpoint is disabled. */
  failing_since: string | null;
  created_at: string;
  updated_at: string;
  removed_at: string | null;
}

/** The outbox: one row per event, written in the transaction of the change that caused it. */
export interface WebhookEventsTable {
  /** `msg_...`: the `webhook-id` of every delivery of this event. */
  id: string;
  account_id: string;
  type: string;
  /** The JSON body sent, `{type, timestamp, data}`, exactly as signed. */
  payload: string;
  created_at: string;
}

/** One event owed to one endpoint, delivered in seq order, one in flight per endpoint. */
export interface WebhookDeliveriesTable {
  /** Assigned by the store at insert (creation order); an endpoint's deliveries go out in this order. */
  seq: Generated<bigint>;
  id: string;
  endpoint_id: string;
  event_id: string;
  event_type: string;
  state: WebhookDeliveryState;
  attempts: bigint;
  next_attempt_at: string | null;
  /** While a worker sends it: another replica (or this one after a crash) retries only after this. */
  lease_until: string | null;
  last_status: bigint | null;
  last_error: string | null;
  last_attempt_at: string | null;
  delivered_at: string | null;
  created_at: string;
}

/** The liveness last told to a machine's owner (machine.online / machine.offline). */
export interface WebhookMachineLivenessTable {
  machine_id: string;
  /** 1 online, 0 offline. */
  online: bigint;
  changed_at: string;
}

export interface WebhooksTables {
  webhook_endpoints: WebhookEndpointsTable;
  webhook_events: WebhookEventsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_machine_liveness: WebhookMachineLivenessTable;
}
