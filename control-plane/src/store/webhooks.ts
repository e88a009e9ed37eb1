import { randomUUID } from 'node:crypto';
import type { WebhookEventType } from '@ark/shared';
import { type Selectable, sql } from 'kysely';
import { iso } from '../clock.js';
import { type Executor, isPostgres, type Tx } from './db.js';
import { type KeysetPosition, keysetPage } from './keyset.js';
import type { WebhookDeliveriesTable, WebhookEndpointsTable } from './tables/webhooks.js';

// Signed webhooks: endpoints, the event outbox and the deliveries owed. An event is written by emitWebhookEvent inside
// the transaction of the change that causes it, with one delivery per subscribed endpoint, so it commits (and is
// delivered) exactly when the change does. workers/webhooks.ts sends the deliveries.

export type WebhookEndpointRow = Selectable<WebhookEndpointsTable>;
export type WebhookDeliveryRow = Selectable<WebhookDeliveriesTable>;

/** The largest `data` an event may carry, serialized: deliveries stay small and bounded. */
export const WEBHOOK_DATA_BYTES_MAX = 16_384;

export const newWebhookEventId = (): string => `msg_${randomUUID().replaceAll('-', '')}`;

/**
 * Records an event of `type` for `accountId` in the caller's transaction and owes it to each of the account's enabled
 * endpoints subscribed to the type. Any area calls it beside its own writes (the job, the ledger posting, the
 * message): the event exists if and only if the change commits. Returns the event id (the `webhook-id` every delivery
 * carries), or null when no endpoint wants it (nothing is written then).
 */
export async function emitWebhookEvent(
  trx: Tx,
  accountId: string,
  type: WebhookEventType,
  data: Record<string, unknown>,
  now: Date,
): Promise<string | null> {
  const endpoints = await trx
    .selectFrom('webhook_endpoints')
    .select(['id', 'event_types'])
    .where('account_id', '=', accountId)
    .where('state', '=', 'enabled')
    .where('removed_at', 'is', null)
    .orderBy('id')
    .execute();
  const subscribed = endpoints.filter((e) => (JSON.parse(e.event_types) as string[]).includes(type));
  if (subscribed.length === 0) return null;
  const id = newWebhookEventId();
  await insertWebhookEvent(trx, { id, accountId, type, data, now });
  for (const endpoint of subscribed) await enqueueDelivery(trx, { endpointId: endpoint.id, eventId: id, eventType: type, now });
  return id;
}

/** Writes an event row (the signed body is fixed here, once): `{type, timestamp, data}`. */
export async function insertWebhookEvent(
  trx: Tx,
  input: { id: string; accountId: string; type: WebhookEventType; data: Record<string, unknown>; now: Date },
): Promise<void> {
  const data = JSON.stringify(input.data);
  if (Buffer.byteLength(data) > WEBHOOK_DATA_BYTES_MAX)
    throw new Error(`webhook event ${input.type} data is over ${WEBHOOK_DATA_BYTES_MAX} bytes`);
  const at = iso(input.now);
  await trx
    .insertInto('webhook_events')
    .values({
      id: input.id,
      account_id: input.accountId,
      type: input.type,
      payload: `{"type":${JSON.stringify(input.type)},"timestamp":${JSON.stringify(at)},"data":${data}}`,
      created_at: at,
    })
    .execute();
}

/**
 * Owes an event to an endpoint. Nothing shared is locked (the store numbers the row), so any use case may emit in the
 * middle of its own lock order without risking a deadlock with another.
 */
export async function enqueueDelivery(
  trx: Tx,
  input: { endpointId: string; eventId: string; eventType: string; now: Date },
): Promise<{ id: string }> {
  const at = iso(input.now);
  const row = {
    id: randomUUID(),
    endpoint_id: input.endpointId,
    event_id: input.eventId,
    event_type: input.eventType,
    state: 'pending',
    attempts: 0n,
    next_attempt_at: at,
    lease_until: null,
    last_status: null,
    last_error: null,
    last_attempt_at: null,
    delivered_at: null,
    created_at: at,
  } as const;
  await trx.insertInto('webhook_deliveries').values(row).execute();
  return { id: row.id };
}

// ---- endpoints

export async function insertWebhookEndpoint(
  db: Executor,
  input: {
    id: string;
    accountId: string;
    url: string;
    description: string | null;
    eventTypes: readonly string[];
    secretSealed: string;
    now: Date;
  },
): Promise<WebhookEndpointRow> {
  const at = iso(input.now);
  const row: WebhookEndpointRow = {
    id: input.id,
    account_id: input.accountId,
    url: input.url,
    description: input.description,
    event_types: JSON.stringify(input.eventTypes),
    secret_sealed: input.secretSealed,
    previous_secret_sealed: null,
    previous_secret_expires_at: null,
    state: 'enabled',
    disabled_reason: null,
    failing_since: null,
    created_at: at,
    updated_at: at,
    removed_at: null,
  };
  await db.insertInto('webhook_endpoints').values(row).execute();
  return row;
}

/** A live (not removed) endpoint of the account. */
export async function findWebhookEndpoint(db: Executor, accountId: string, id: string): Promise<WebhookEndpointRow | undefined> {
  return db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .where('removed_at', 'is', null)
    .executeTakeFirst();
}

export async function findWebhookEndpointById(db: Executor, id: string): Promise<WebhookEndpointRow | undefined> {
  return db.selectFrom('webhook_endpoints').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The live endpoint row, locked until the transaction ends (Postgres; SQLite serialises writers). */
export async function lockWebhookEndpoint(trx: Tx, accountId: string, id: string): Promise<WebhookEndpointRow | undefined> {
  const query = trx
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .where('removed_at', 'is', null);
  return (isPostgres(trx) ? query.forUpdate() : query).executeTakeFirst();
}

export async function countLiveWebhookEndpoints(db: Executor, accountId: string): Promise<number> {
  const row = await db
    .selectFrom('webhook_endpoints')
    .select(sql<bigint>`count(*)`.as('n'))
    .where('account_id', '=', accountId)
    .where('removed_at', 'is', null)
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** Live endpoints of the account, newest first, after the cursor position [created_at, id]. */
export async function listWebhookEndpoints(
  db: Executor,
  accountId: string,
  after: KeysetPosition | null,
  fetch: number,
): Promise<WebhookEndpointRow[]> {
  const query = db.selectFrom('webhook_endpoints').selectAll().where('account_id', '=', accountId).where('removed_at', 'is', null);
  return keysetPage(query, ['created_at', 'id'], 'desc', after, fetch).execute();
}

export async function updateWebhookEndpoint(db: Executor, id: string, patch: Partial<Omit<WebhookEndpointRow, 'id'>>): Promise<void> {
  await db.updateTable('webhook_endpoints').set(patch).where('id', '=', id).execute();
}

/** Removes the endpoint; its pending deliveries are dropped with it (marked failed: nobody is there to receive them). */
export async function removeWebhookEndpoint(trx: Tx, accountId: string, id: string, now: Date): Promise<boolean> {
  const result = await trx
    .updateTable('webhook_endpoints')
    .set({ removed_at: iso(now), state: 'disabled', disabled_reason: 'removed', updated_at: iso(now) })
    .where('id', '=', id)
    .where('account_id', '=', accountId)
    .where('removed_at', 'is', null)
    .executeTakeFirst();
  if (Number(result.numUpdatedRows) !== 1) return false;
  await trx
    .updateTable('webhook_deliveries')
    .set({ state: 'failed', next_attempt_at: null, lease_until: null, last_error: 'endpoint removed' })
    .where('endpoint_id', '=', id)
    .where('state', '=', 'pending')
    .execute();
  return true;
}

// ---- deliveries

export async function findDelivery(db: Executor, endpointId: string, id: string): Promise<WebhookDeliveryRow | undefined> {
  return db.selectFrom('webhook_deliveries').selectAll().where('id', '=', id).where('endpoint_id', '=', endpointId).executeTakeFirst();
}

/** The endpoint's deliveries, newest first, after the cursor position [seq]. */
export async function listDeliveries(
  db: Executor,
  endpointId: string,
  afterSeq: string | null,
  fetch: number,
): Promise<WebhookDeliveryRow[]> {
  const query = db.selectFrom('webhook_deliveries').selectAll().where('endpoint_id', '=', endpointId);
  const after = afterSeq === null ? null : ([BigInt(afterSeq), BigInt(afterSeq)] as const);
  return keysetPage(query, ['seq', 'seq'], 'desc', after, fetch).execute();
}

export async function findWebhookEventPayload(db: Executor, eventId: string): Promise<{ type: string; payload: string } | undefined> {
  return db.selectFrom('webhook_events').select(['type', 'payload']).where('id', '=', eventId).executeTakeFirst();
}

/**
 * The endpoints' next deliveries to try: for each enabled endpoint, its oldest pending delivery (deliveries of one
 * endpoint go in order, one at a time), when it is due and nobody holds its lease. At most `limit`.
 */
export async function dueDeliveries(db: Executor, now: Date, limit: number): Promise<WebhookDeliveryRow[]> {
  const at = iso(now);
  return db
    .selectFrom('webhook_deliveries as d')
    .innerJoin('webhook_endpoints as e', 'e.id', 'd.endpoint_id')
    .selectAll('d')
    .where('e.state', '=', 'enabled')
    .where('d.state', '=', 'pending')
    .where((eb) =>
      eb(
        'd.seq',
        '=',
        eb
          .selectFrom('webhook_deliveries as h')
          .select((h) => h.fn.min('h.seq').as('head'))
          .whereRef('h.endpoint_id', '=', 'd.endpoint_id')
          .where('h.state', '=', 'pending'),
      ),
    )
    .where('d.next_attempt_at', '<=', at)
    .where((eb) => eb.or([eb('d.lease_until', 'is', null), eb('d.lease_until', '<=', at)]))
    .orderBy('d.next_attempt_at')
    .limit(limit)
    .execute();
}

/** Takes the delivery for one attempt until `leaseUntil`, if it is still pending and unheld; false when another took it. */
export async function leaseDelivery(db: Executor, id: string, now: Date, leaseUntil: Date): Promise<boolean> {
  const at = iso(now);
  const result = await db
    .updateTable('webhook_deliveries')
    .set((eb) => ({ lease_until: iso(leaseUntil), attempts: eb('attempts', '+', 1n), last_attempt_at: at }))
    .where('id', '=', id)
    .where('state', '=', 'pending')
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<=', at)]))
    .executeTakeFirst();
  return Number(result.numUpdatedRows) === 1;
}

/** Records an attempt's outcome and frees the lease. */
export async function recordAttempt(
  db: Executor,
  id: string,
  outcome: {
    state: WebhookDeliveryRow['state'];
    status: number | null;
    error: string | null;
    nextAttemptAt: Date | null;
    deliveredAt: Date | null;
  },
): Promise<void> {
  await db
    .updateTable('webhook_deliveries')
    .set({
      state: outcome.state,
      last_status: outcome.status === null ? null : BigInt(outcome.status),
      last_error: outcome.error,
      next_attempt_at: outcome.nextAttemptAt === null ? null : iso(outcome.nextAttemptAt),
      delivered_at: outcome.deliveredAt === null ? null : iso(outcome.deliveredAt),
      lease_until: null,
    })
    .where('id', '=', id)
    .execute();
}

/** Drops events no delivery needs any more (every delivery of theirs settled) older than `before`. */
export async function purgeWebhookHistory(db: Executor, before: Date, limit: number): Promise<number> {
  const cutoff = iso(before);
  const old = await db
    .selectFrom('webhook_deliveries')
    .select('id')
    .where('created_at', '<', cutoff)
    .where('state', '!=', 'pending')
    .limit(limit)
    .execute();
  if (old.length === 0) return 0;
  await db
    .deleteFrom('webhook_deliveries')
    .where(
      'id',
      'in',
      old.map((r) => r.id),
    )
    .execute();
  await db
    .deleteFrom('webhook_events')
    .where('created_at', '<', cutoff)
    .where((eb) =>
      eb.not(eb.exists(eb.selectFrom('webhook_deliveries as d').select('d.id').whereRef('d.event_id', '=', 'webhook_events.id'))),
    )
    .execute();
  return old.length;
}

// ---- machine liveness told to owners

export interface LivenessChange {
  machineId: string;
  ownerAccountId: string;
  online: boolean;
}

/**
 * Machines whose liveness differs from what their owner was last told: heard from since `onlineSince` but told
 * offline (or never told), or told online and silent since then. At most `limit` of each.
 */
export async function livenessChanges(db: Executor, onlineSince: Date, limit: number): Promise<LivenessChange[]> {
  const since = iso(onlineSince);
  const cameOnline = await db
    .selectFrom('machines as m')
    .leftJoin('webhook_machine_liveness as l', 'l.machine_id', 'm.id')
    .select(['m.id', 'm.owner_account_id'])
    .where('m.last_heartbeat_at', '>=', since)
    .where((eb) => eb.or([eb('l.online', 'is', null), eb('l.online', '=', 0n)]))
    .limit(limit)
    .execute();
  const wentOffline = await db
    .selectFrom('webhook_machine_liveness as l')
    .innerJoin('machines as m', 'm.id', 'l.machine_id')
    .select(['m.id', 'm.owner_account_id'])
    .where('l.online', '=', 1n)
    .where((eb) => eb.or([eb('m.last_heartbeat_at', 'is', null), eb('m.last_heartbeat_at', '<', since)]))
    .limit(limit)
    .execute();
  return [
    ...cameOnline.map((r) => ({ machineId: r.id, ownerAccountId: r.owner_account_id, online: true })),
    ...wentOffline.map((r) => ({ machineId: r.id, ownerAccountId: r.owner_account_id, online: false })),
  ];
}

/** Records what the owner is told now; false when another replica recorded the same change first. */
export async function recordLivenessTold(trx: Tx, machineId: string, online: boolean, now: Date): Promise<boolean> {
  const value = online ? 1n : 0n;
  const at = iso(now);
  const updated = await trx
    .updateTable('webhook_machine_liveness')
    .set({ online: value, changed_at: at })
    .where('machine_id', '=', machineId)
    .where('online', '!=', value)
    .executeTakeFirst();
  if (Number(updated.numUpdatedRows) === 1) return true;
  const inserted = await trx
    .insertInto('webhook_machine_liveness')
    .values({ machine_id: machineId, online: value, changed_at: at })
    .onConflict((oc) => oc.column('machine_id').doNothing())
    .returning('machine_id')
    .executeTakeFirst();
  return inserted !== undefined;
}
