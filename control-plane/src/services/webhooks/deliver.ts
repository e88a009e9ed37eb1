import { iso } from '../../clock.js';
import { afterAttempt, failingTooLong, isGone } from '../../domain/webhooks/delivery.js';
import { signedHeaders } from '../../domain/webhooks/signing.js';
import { inTransactionWithRetry } from '../../store/transaction.js';
import {
  dueDeliveries,
  findWebhookEndpointById,
  findWebhookEventPayload,
  leaseDelivery,
  recordAttempt,
  updateWebhookEndpoint,
  type WebhookDeliveryRow,
} from '../../store/webhooks.js';
import { allowedAddresses } from './address-check.js';
import type { WebhookDeps } from './deps.js';
import { liveSecretsOf } from './endpoints.js';

/** One HTTP POST of a signed delivery: the status the receiver answered, or null with why there was none. */
export type WebhookSender = (request: {
  url: string;
  /** Connect only to these (checked) addresses: the name is not resolved again. */
  addresses: string[];
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
}) => Promise<{ status: number | null; error: string | null }>;

export interface DeliveryStepResult {
  attempted: number;
  succeeded: number;
}

/** Longest error text kept on a delivery. */
const ERROR_LENGTH_MAX = 300;

/**
 * One step of the delivery worker: each endpoint's next due delivery (one in flight per endpoint, in order), sent
 * signed, concurrently across endpoints. A delivery is leased in the store before it is sent, for twice the attempt
 * timeout: a crash mid-attempt leaves it to be sent again (same id, same body) once the lease runs out, never lost.
 */
export async function deliverDue(deps: WebhookDeps, send: WebhookSender): Promise<DeliveryStepResult> {
  const now = deps.clock.now();
  const due = await dueDeliveries(deps.store.db, now, deps.settings.batchSize);
  const results = await Promise.all(due.map((delivery) => attempt(deps, send, delivery)));
  return { attempted: results.filter((r) => r !== null).length, succeeded: results.filter((r) => r === true).length };
}

/** Sends one delivery; null when another worker holds it, else whether the receiver took it. */
async function attempt(deps: WebhookDeps, send: WebhookSender, delivery: WebhookDeliveryRow): Promise<boolean | null> {
  const started = deps.clock.now();
  const leaseUntil = new Date(started.getTime() + 2 * deps.settings.timeoutMs);
  if (!(await leaseDelivery(deps.store.db, delivery.id, started, leaseUntil))) return null;
  const attempts = Number(delivery.attempts) + 1;
  const endpoint = await findWebhookEndpointById(deps.store.db, delivery.endpoint_id);
  const event = await findWebhookEventPayload(deps.store.db, delivery.event_id);
  if (endpoint?.state !== 'enabled' || !event) {
    await recordAttempt(deps.store.db, delivery.id, {
      state: 'failed',
      status: null,
      error: 'endpoint disabled or event gone',
      nextAttemptAt: null,
      deliveredAt: null,
    });
    return false;
  }
  let status: number | null = null;
  let error: string | null = null;
  try {
    const addresses = await allowedAddresses(endpoint.url, deps.settings.allowPrivate, deps.resolve);
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'ark-webhooks/1',
      ...signedHeaders(liveSecretsOf(deps, endpoint, started), delivery.event_id, started, event.payload),
    };
    ({ status, error } = await send({ url: endpoint.url, addresses, headers, body: event.payload, timeoutMs: deps.settings.timeoutMs }));
  } catch (cause) {
    error = cause instanceof Error ? cause.message : String(cause);
  }
  const now = deps.clock.now();
  const outcome = afterAttempt(attempts, status, now, Math.random());
  const trimmed = error === null ? null : error.slice(0, ERROR_LENGTH_MAX);
  await inTransactionWithRetry(deps.store, async (trx) => {
    if (outcome.kind === 'succeeded') {
      await recordAttempt(trx, delivery.id, { state: 'succeeded', status, error: null, nextAttemptAt: null, deliveredAt: now });
      if (endpoint.failing_since !== null) await updateWebhookEndpoint(trx, endpoint.id, { failing_since: null, updated_at: iso(now) });
      return;
    }
    const failingSince = endpoint.failing_since === null ? now : new Date(endpoint.failing_since);
    const disable = isGone(status) ? 'gone' : failingTooLong(failingSince, now, deps.settings.disableAfterMs) ? 'failing' : null;
    if (disable !== null || outcome.kind === 'exhausted') {
      await recordAttempt(trx, delivery.id, { state: 'failed', status, error: trimmed, nextAttemptAt: null, deliveredAt: null });
    } else {
      await recordAttempt(trx, delivery.id, { state: 'pending', status, error: trimmed, nextAttemptAt: outcome.at, deliveredAt: null });
    }
    await updateWebhookEndpoint(trx, endpoint.id, {
      failing_since: iso(failingSince),
      ...(disable !== null ? { state: 'disabled' as const, disabled_reason: disable } : {}),
      updated_at: iso(now),
    });
  });
  return outcome.kind === 'succeeded';
}
