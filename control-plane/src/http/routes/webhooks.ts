import {
  IdempotencyHeaders,
  IdParams,
  Page,
  PageQuery,
  WebhookDelivery,
  WebhookDeliveryParams,
  WebhookDeliveryQueued,
  WebhookEndpoint,
  WebhookEndpointCreated,
  WebhookEndpointCreateRequest,
  WebhookEndpointRemoved,
  WebhookSecretRotated,
} from '@ark/shared';
import {
  webhookDeliveryView,
  webhookEndpointCreatedView,
  webhookEndpointView,
  webhookQueuedView,
  webhookSecretRotatedView,
} from '../../views/webhooks.js';
import { principalOf } from '../auth.js';
import type { AppContext } from '../context.js';
import { answerInTransaction } from '../idempotency.js';
import { fetchSize } from '../pagination.js';
import { withErrors } from '../schemas.js';
import type { TypedApp } from '../typed-app.js';

export function registerWebhookRoutes(app: TypedApp, ctx: AppContext): void {
  const webhooks = ctx.services.webhooks;

  app.post(
    '/api/v1/webhooks',
    {
      config: { auth: {}, idempotent: true },
      schema: {
        summary: 'Register a webhook endpoint and the event types it wants; its whsec_ secret is shown once',
        tags: ['webhooks'],
        headers: IdempotencyHeaders,
        body: WebhookEndpointCreateRequest,
        response: withErrors({ 201: WebhookEndpointCreated }, 409),
      },
    },
    async (request, reply) => {
      const created = await webhooks.create(
        {
          accountId: principalOf(request).accountId,
          url: request.body.url,
          description: request.body.description ?? null,
          eventTypes: request.body.event_types,
        },
        answerInTransaction(request, reply, 201, webhookEndpointCreatedView),
      );
      return reply.code(201).send(webhookEndpointCreatedView(created));
    },
  );

  app.get(
    '/api/v1/webhooks',
    {
      config: { auth: {} },
      schema: {
        summary: 'The caller’s webhook endpoints, newest first (secrets are never shown again)',
        tags: ['webhooks'],
        querystring: PageQuery,
        response: withErrors({ 200: Page(WebhookEndpoint) }),
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const scope = `webhooks:${principal.accountId}`;
      const after = ctx.paginator.decode<[string, string]>(scope, request.query.cursor);
      const endpoints = await webhooks.list(principal.accountId, after, fetchSize(request.query.limit));
      return ctx.paginator.page(scope, endpoints, request.query.limit, (e) => [e.createdAt, e.id], webhookEndpointView);
    },
  );

  app.delete(
    '/api/v1/webhooks/:id',
    {
      config: { auth: {} },
      schema: {
        summary: 'Remove a webhook endpoint; what it was still owed is dropped',
        tags: ['webhooks'],
        params: IdParams,
        response: withErrors({ 200: WebhookEndpointRemoved }, 404),
      },
    },
    async (request) => {
      await webhooks.remove(principalOf(request).accountId, request.params.id);
      return { removed: true as const };
    },
  );

  app.post(
    '/api/v1/webhooks/:id/rotate-secret',
    {
      config: { auth: {}, idempotent: true },
      schema: {
        summary: 'A new secret, shown once; the old one keeps signing beside it for a day',
        tags: ['webhooks'],
        headers: IdempotencyHeaders,
        params: IdParams,
        response: withErrors({ 200: WebhookSecretRotated }, 404),
      },
    },
    async (request, reply) => {
      const rotated = await webhooks.rotateSecret(
        { accountId: principalOf(request).accountId, id: request.params.id },
        answerInTransaction(request, reply, 200, webhookSecretRotatedView),
      );
      return webhookSecretRotatedView(rotated);
    },
  );

  app.post(
    '/api/v1/webhooks/:id/test',
    {
      config: { auth: {}, idempotent: true },
      schema: {
        summary: 'Queue a webhook.test event to this endpoint',
        tags: ['webhooks'],
        headers: IdempotencyHeaders,
        params: IdParams,
        response: withErrors({ 202: WebhookDeliveryQueued }, 404),
      },
    },
    async (request, reply) => {
      const queued = await webhooks.sendTest(
        { accountId: principalOf(request).accountId, id: request.params.id },
        answerInTransaction(request, reply, 202, webhookQueuedView),
      );
      return reply.code(202).send(webhookQueuedView(queued));
    },
  );

  app.get(
    '/api/v1/webhooks/:id/deliveries',
    {
      config: { auth: {} },
      schema: {
        summary: 'The endpoint’s recent deliveries, newest first',
        tags: ['webhooks'],
        params: IdParams,
        querystring: PageQuery,
        response: withErrors({ 200: Page(WebhookDelivery) }, 404),
      },
    },
    async (request) => {
      const accountId = principalOf(request).accountId;
      const scope = `webhook-deliveries:${request.params.id}`;
      const after = ctx.paginator.decode<string>(scope, request.query.cursor);
      const deliveries = await webhooks.deliveries({
        accountId,
        id: request.params.id,
        afterSeq: after,
        fetch: fetchSize(request.query.limit),
      });
      return ctx.paginator.page(scope, deliveries, request.query.limit, (d) => d.seq.toString(), webhookDeliveryView);
    },
  );

  app.post(
    '/api/v1/webhooks/:id/deliveries/:delivery_id/replay',
    {
      config: { auth: {}, idempotent: true },
      schema: {
        summary: 'Deliver an event again (same webhook-id and body)',
        tags: ['webhooks'],
        headers: IdempotencyHeaders,
        params: WebhookDeliveryParams,
        response: withErrors({ 202: WebhookDeliveryQueued }, 404),
      },
    },
    async (request, reply) => {
      const queued = await webhooks.replay(
        { accountId: principalOf(request).accountId, id: request.params.id, deliveryId: request.params.delivery_id },
        answerInTransaction(request, reply, 202, webhookQueuedView),
      );
      return reply.code(202).send(webhookQueuedView(queued));
    },
  );
}
