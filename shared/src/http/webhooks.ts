import { type Static, Type } from '@sinclair/typebox';
import { Nullable, Rfc3339Utc, Uuid } from '../formats.js';

// Signed webhooks (Standard Webhooks v1). Every delivery carries `webhook-id` (the event's id, the same on every
// retry and replay), `webhook-timestamp` (seconds) and `webhook-signature` (`v1,<base64 HMAC-SHA256>` over
// `id.timestamp.body`, one per live secret, space separated). The body is `{type, timestamp, data}`.

/**
 * Every event type an endpoint may subscribe to, and what its `data` holds:
 * - `job.state_changed`: a job of yours (as renter or host) moved: `{job_id, from, to, machine_id}` (`from` null at reservation).
 * - `job.budget_threshold`: a job's charges crossed 50, 80 or 100 % of its funded budget: `{job_id, percent, charged_micro, funded_budget_micro}`.
 * - `job.credited`: a job failed through the host's side and its renter was credited automatically (issue 24), sent to
 *   the renter and the host: `{job_id, reason, credit_micro, runtime_ms, healthy_at, from_host_pending_micro,
 *   from_host_payable_micro, from_platform_micro}` (the host's share from its earnings, the fee and any shortfall from
 *   the platform).
 * - `deposit.credited`: a deposit reached your balance: `{deposit_id, network, asset, tx_hash, credited_micro}`.
 * - `topup.credited`: an x402 top-up reached your balance once its settlement was final:
 *   `{intent_id, network, payer, tx_hash, credited_micro}`.
 * - `withdrawal.state_changed`: a withdrawal of your available balance moved;
 *   `payout.state_changed`: a payout of your payable earnings moved. Both carry
 *   `{withdrawal_id, kind, from, to, amount_micro, tx_hash}`: `from` is null when the request is made (to INTENT), then
 *   one event per move (INTENT -> UNSIGNED held for review, UNSIGNED -> INTENT approved or FAILED rejected, INTENT ->
 *   SIGNED, SIGNED -> BROADCAST, BROADCAST -> CONFIRMED or FAILED); `tx_hash` is null until a transfer is signed.
 * - `machine.online`, `machine.offline`: your machine's agent came back or fell silent: `{machine_id}`.
 * - `machine.reliability_delisted`: your machine fell under the reliability floor and is no longer offered to new
 *   rentals: `{machine_id, score, floor, penalized_jobs}` (scores as "0.9876").
 * - `machine.reliability_restored`: its score is back at or above the floor and it is offered again (same data).
 * - `machine.unlisted`: a signed self-test receipt of your machine contradicts the hardware it declared (fewer GPUs,
 *   another model, VRAM short, a score far under its class, or a failed self-test); it is no longer offered to new
 *   rentals and a support case says why: `{machine_id, receipt_seq, reasons: [{code, message}], ticket_id}`.
 * - `machine.relisted`: a later receipt agrees with the declared hardware and the machine is offered again:
 *   `{machine_id, receipt_seq, score}` (score null without a benchmark).
 * - `ticket.message_created`: someone else wrote on a ticket you are party to: `{ticket_id, message_id, author_role, job_id}`.
 * - `webhook.test`: sent only by the test operation, to the one endpoint asked: `{endpoint_id}`.
 */
export const WebhookEventTypeSchema = Type.Union([
  Type.Literal('job.state_changed'),
  Type.Literal('job.budget_threshold'),
  Type.Literal('job.credited'),
  Type.Literal('deposit.credited'),
  Type.Literal('topup.credited'),
  Type.Literal('withdrawal.state_changed'),
  Type.Literal('payout.state_changed'),
  Type.Literal('machine.online'),
  Type.Literal('machine.offline'),
  Type.Literal('machine.reliability_delisted'),
  Type.Literal('machine.reliability_restored'),
  Type.Literal('machine.unlisted'),
  Type.Literal('machine.relisted'),
  Type.Literal('ticket.message_created'),
  Type.Literal('webhook.test'),
]);
export type WebhookEventType = Static<typeof WebhookEventTypeSchema>;
export const WEBHOOK_EVENT_TYPES: readonly WebhookEventType[] = WebhookEventTypeSchema.anyOf.map((t) => t.const);

/** Endpoints one account may register. */
export const WEBHOOK_ENDPOINTS_MAX = 20;
export const WEBHOOK_URL_LENGTH_MAX = 2048;

export const WebhookEndpointState = Type.Union([Type.Literal('enabled'), Type.Literal('disabled')]);
export type WebhookEndpointState = Static<typeof WebhookEndpointState>;

export const WebhookEndpointCreateRequest = Type.Object(
  {
    url: Type.String({
      minLength: 8,
      maxLength: WEBHOOK_URL_LENGTH_MAX,
      pattern: '^https?://',
      description: 'https:// (http:// only where the operator allows private endpoints)',
    }),
    event_types: Type.Array(WebhookEventTypeSchema, { minItems: 1, maxItems: WEBHOOK_EVENT_TYPES.length, uniqueItems: true }),
    description: Type.Optional(Type.String({ maxLength: 200 })),
  },
  { additionalProperties: false },
);
export type WebhookEndpointCreateRequest = Static<typeof WebhookEndpointCreateRequest>;

export const WebhookEndpoint = Type.Object(
  {
    id: Uuid,
    url: Type.String(),
    description: Nullable(Type.String()),
    event_types: Type.Array(WebhookEventTypeSchema),
    state: WebhookEndpointState,
    /** Why it was disabled: gone (410), failing (days of failed deliveries). */
    disabled_reason: Nullable(Type.String()),
    /** While a rotated-out secret still signs deliveries (next to the current one). */
    previous_secret_expires_at: Nullable(Rfc3339Utc),
    created_at: Rfc3339Utc,
  },
  { additionalProperties: false },
);
export type WebhookEndpoint = Static<typeof WebhookEndpoint>;

/** A secret is `whsec_` + base64 of 24 random bytes; shown once, at creation or rotation. */
export const WebhookSecret = Type.String({ pattern: '^whsec_[A-Za-z0-9+/=]+$' });

export const WebhookEndpointCreated = Type.Object(
  { ...WebhookEndpoint.properties, secret: WebhookSecret },
  { additionalProperties: false },
);
export type WebhookEndpointCreated = Static<typeof WebhookEndpointCreated>;

export const WebhookSecretRotated = Type.Object(
  { id: Uuid, secret: WebhookSecret, previous_secret_expires_at: Rfc3339Utc },
  { additionalProperties: false },
);
export type WebhookSecretRotated = Static<typeof WebhookSecretRotated>;

export const WebhookEndpointRemoved = Type.Object({ removed: Type.Literal(true) }, { additionalProperties: false });

export const WebhookDeliveryState = Type.Union([Type.Literal('pending'), Type.Literal('succeeded'), Type.Literal('failed')]);
export type WebhookDeliveryState = Static<typeof WebhookDeliveryState>;

export const WebhookDelivery = Type.Object(
  {
    delivery_id: Uuid,
    /** The `webhook-id` header: the same on every attempt and every replay of the event. */
    event_id: Type.String(),
    event_type: WebhookEventTypeSchema,
    state: WebhookDeliveryState,
    attempts: Type.Integer({ minimum: 0 }),
    last_status: Nullable(Type.Integer()),
    last_error: Nullable(Type.String()),
    next_attempt_at: Nullable(Rfc3339Utc),
    delivered_at: Nullable(Rfc3339Utc),
    created_at: Rfc3339Utc,
  },
  { additionalProperties: false },
);
export type WebhookDelivery = Static<typeof WebhookDelivery>;

export const WebhookDeliveryQueued = Type.Object({ delivery_id: Uuid, event_id: Type.String() }, { additionalProperties: false });
export type WebhookDeliveryQueued = Static<typeof WebhookDeliveryQueued>;

export const WebhookDeliveryParams = Type.Object({ id: Uuid, delivery_id: Uuid }, { additionalProperties: false });
export type WebhookDeliveryParams = Static<typeof WebhookDeliveryParams>;
