import { lookup } from 'node:dns/promises';
import type { WebhookEventType } from '@ark/shared';
import type { Clock } from '../../clock.js';
import type { WebhooksConfig } from '../../config/webhooks.js';
import { SecretBox } from '../../domain/accounts/secret-box.js';
import type { Store } from '../../store/db.js';
import type { KeysetPosition } from '../../store/keyset.js';
import type { CommitHook } from '../../store/transaction.js';
import { purgeWebhookHistory } from '../../store/webhooks.js';
import { commitMapped } from '../records.js';
import { deliverDue, type WebhookSender } from './deliver.js';
import { type QueuedDelivery, recentDeliveries, replayDelivery, sendTestEvent } from './deliveries.js';
import { tellLivenessChanges } from './machine-liveness.js';
import type { HostResolver, WebhookDeps } from './deps.js';
import {
  createWebhookEndpoint,
  listAccountWebhookEndpoints,
  removeAccountWebhookEndpoint,
  type RotatedSecret,
  rotateWebhookSecret,
} from './endpoints.js';
import {
  type NewWebhookEndpoint,
  toNewWebhookEndpoint,
  toWebhookDeliveryRecord,
  toWebhookEndpointRecord,
  type WebhookDeliveryRecord,
  type WebhookEndpointRecord,
} from './records.js';

export type { NewWebhookEndpoint, WebhookDeliveryRecord, WebhookEndpointRecord } from './records.js';
export type { QueuedDelivery } from './deliveries.js';
export type { RotatedSecret } from './endpoints.js';

/** How long settled deliveries (and events nobody is owed any more) are kept for the deliveries list and replays. */
export const WEBHOOK_HISTORY_KEPT_MS = 30 * 86400 * 1000;

const systemResolver: HostResolver = async (host) => (await lookup(host, { all: true })).map((a) => a.address);

/** Signed webhooks (issue 10): endpoints, secrets, the test event, deliveries and their replay, the delivery step. */
export function buildWebhookServices(input: {
  store: Store;
  clock: Clock;
  settings: WebhooksConfig;
  secretKey: Buffer;
  /** The agents' heartbeat interval: a machine is online within 3 of them (machine.online / machine.offline). */
  heartbeatIntervalMs: number;
  resolve?: HostResolver;
}) {
  const deps: WebhookDeps = {
    store: input.store,
    clock: input.clock,
    settings: input.settings,
    box: new SecretBox(input.secretKey),
    resolve: input.resolve ?? systemResolver,
  };
  return {
    settings: input.settings,
    heartbeatIntervalMs: input.heartbeatIntervalMs,
    create: async (
      body: { accountId: string; url: string; description: string | null; eventTypes: readonly WebhookEventType[] },
      commit?: CommitHook<NewWebhookEndpoint>,
    ): Promise<NewWebhookEndpoint> =>
      toNewWebhookEndpoint(await createWebhookEndpoint(deps, body, commitMapped(commit, toNewWebhookEndpoint))),
    list: async (accountId: string, after: KeysetPosition | null, fetch: number): Promise<WebhookEndpointRecord[]> =>
      (await listAccountWebhookEndpoints(deps, accountId, after, fetch)).map(toWebhookEndpointRecord),
    remove: (accountId: string, id: string) => removeAccountWebhookEndpoint(deps, accountId, id),
    rotateSecret: (body: { accountId: string; id: string }, commit?: CommitHook<RotatedSecret>) => rotateWebhookSecret(deps, body, commit),
    sendTest: (body: { accountId: string; id: string }, commit?: CommitHook<QueuedDelivery>) => sendTestEvent(deps, body, commit),
    replay: (body: { accountId: string; id: string; deliveryId: string }, commit?: CommitHook<QueuedDelivery>) =>
      replayDelivery(deps, body, commit),
    deliveries: async (body: { accountId: string; id: string; afterSeq: string | null; fetch: number }): Promise<WebhookDeliveryRecord[]> =>
      (await recentDeliveries(deps, body)).map(toWebhookDeliveryRecord),
    /** One step of the delivery worker (workers/webhooks.ts gives the real HTTP sender). */
    deliverDue: (send: WebhookSender) => deliverDue(deps, send),
    /** One step of the liveness worker: machine.online / machine.offline for changes not told yet. */
    tellLivenessChanges: () => tellLivenessChanges(deps, input.heartbeatIntervalMs),
    purgeHistory: (now: Date) => purgeWebhookHistory(deps.store.db, new Date(now.getTime() - WEBHOOK_HISTORY_KEPT_MS), 1000),
  };
}

export type WebhookServices = ReturnType<typeof buildWebhookServices>;
export type { WebhookSender } from './deliver.js';
