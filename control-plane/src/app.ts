import { randomUUID } from 'node:crypto';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ErrorEnvelope } from '@ark/shared';
import Fastify, { type FastifyBaseLogger, type FastifyReply, LogController } from 'fastify';
import { ChannelHandlers } from './gateway/handlers.js';
import { fillChannelHandlers } from './gateway/handlers-table.js';
import { identityLoader } from './gateway/identity.js';
import { installChannelGateway } from './gateway/install.js';
import type { ChannelGateway } from './gateway/server.js';
import { installAuth } from './http/auth.js';
import { type EdgeOptions, edgeOptionsFrom, edgeServerOptions, installEdge, rawErrorAnswer } from './http/edge.js';
import { envelope, installErrorHandling } from './http/errors.js';
import { documentRoute } from './http/schemas.js';
import { declareApiReferenceRoutes, registerApiReference } from './http/api-reference.js';
import { completeOpenApiDocument } from './http/openapi-docs.js';
import { installIdempotency } from './http/idempotency.js';
import { requestLogging } from './http/lazy-logger.js';
import { metricsRecorder, proxyHeaderRefusalCounter } from './http/metrics.js';
import { registerReceiptRefusalMetric } from './gateway/metrics.js';
import { observeRequestEnds } from './http/request-end.js';
import { Paginator } from './http/pagination.js';
import { registerAccountRoutes } from './http/routes/accounts.js';
import { registerAdminAdmissionRoutes } from './http/routes/admin-admissions.js';
import { registerAdminOperationRoutes } from './http/routes/admin-operations.js';
import { registerAgentRoutes } from './http/routes/agents.js';
import { registerBillingRoutes } from './http/routes/billing.js';
import { registerX402Routes } from './http/routes/x402.js';
import { registerJobRoutes } from './http/routes/jobs.js';
import { registerMachineRoutes } from './http/routes/machines.js';
import { registerMarketRoutes } from './http/routes/market.js';
import { registerMcpRoutes } from './http/routes/mcp.js';
import { registerNettestRoutes } from './http/routes/nettest.js';
import { registerVerificationRoutes } from './http/routes/verification.js';
import { registerOAuthRoutes } from './http/routes/oauth.js';
import { registerOfferRoutes } from './http/routes/offers.js';
import { registerPairPageRoutes } from './http/routes/pair-page.js';
import { registerPairingRoutes } from './http/routes/pairing.js';
import { registerQuoteRoutes } from './http/routes/quotes.js';
import { registerJobLogRoutes } from './http/routes/job-logs.js';
import { registerRelayRoutes } from './http/routes/relay.js';
import { registerSpendCapRoutes } from './http/routes/spend-cap.js';
import { registerTelemetryRoutes } from './http/routes/telemetry.js';
import { registerSystemRoutes } from './http/routes/system.js';
import { registerTemplateRoutes } from './http/routes/templates.js';
import { registerTicketRoutes } from './http/routes/tickets.js';
import { registerWebhookRoutes } from './http/routes/webhooks.js';
import { registerSshKeyRoutes } from './http/routes/ssh-keys.js';
import { registerWithdrawalAddressRoutes } from './http/routes/withdrawal-addresses.js';
import { registerAdminDepositRoutes } from './http/routes/admin-deposits.js';
import { registerAdminWithdrawalRoutes } from './http/routes/admin-withdrawals.js';
import { registerWithdrawalRoutes } from './http/routes/withdrawals.js';
import type { AppContext, AppContextInput } from './http/context.js';
import type { TypedApp } from './http/typed-app.js';
import { validatorCompiler } from './http/validation.js';
import { registerConsole } from './console/index.js';
import { routeOptionsOf } from './http/route-options.js';

/** Builds the HTTP app; never listens (main.ts does, tests use inject or listen themselves). */
export async function buildApp(input: AppContextInput, options: { logger?: FastifyBaseLogger } = {}): Promise<TypedApp> {
  return (await assembleApp(input, options)).app;
}

export interface AssembledApp {
  app: TypedApp;
  /** The context every route was given. */
  ctx: AppContext;
  /** The agent gateway on the app's server (tests look at its connections). */
  gateway: ChannelGateway;
}

/**
 * No request lines from Fastify: the app writes one "request completed" line per request (requestLogging), with the
 * request's method and URL, where Fastify would write two, the second only from the response listeners it keeps on
 * routes with onResponse hooks.
 */
class CompletionLoggedByApp extends LogController {
  // One line per request: the completion line names the method and the URL as well (http/lazy-logger.ts).
  override incomingRequest(): void {}
  override requestCompleted(): void {}
}

/** buildApp, answering also the context and the gateway it built. */
export async function assembleApp(input: AppContextInput, options: { logger?: FastifyBaseLogger } = {}): Promise<AssembledApp> {
  const { gateway: gatewayInput, claimLocks, listenConnector, attachRelay, ...contextInput } = input;
  const { services } = input;
  const ctx: AppContext = {
    ...contextInput,
    paginator: input.paginator ?? new Paginator(input.config.secretKey),
    services,
    channel: fillChannelHandlers(input.channel ?? new ChannelHandlers(), services),
    channelIdentity: input.channelIdentity ?? identityLoader(input.store, input.config.secretKey),
  };
  const proxyHeaderRefusals = proxyHeaderRefusalCounter(ctx.metrics.registry);
  const edge: EdgeOptions = { ...edgeOptionsFrom(ctx.config), onProxyHeaderRefused: (reason) => proxyHeaderRefusals.inc({ reason }) };
  registerReceiptRefusalMetric(ctx.metrics.registry, services.hosting.receiptRefusals);
  // Fastify gets no logger of its own (it would then add listeners to every response for its "request completed"
  // line): the app's logger, the request loggers and that line come from requestLogging (http/lazy-logger.ts).
  const logging = options.logger ? requestLogging(options.logger) : null;
  const app = Fastify({
    logger: false,
    // The request's logger is built when the request first logs, not for every request (http/lazy-logger.ts).
    ...(logging ? { childLoggerFactory: logging.childLoggerFactory } : {}),
    logController: new CompletionLoggedByApp(),
    // Timeouts, and the envelope for requests Node's parser refuses (http/edge.ts).
    ...edgeServerOptions(edge),
    bodyLimit: ctx.config.bodyLimitBytes,
    // A fresh request id per request, never taken from the client.
    genReqId: () => randomUUID(),
    requestIdHeader: false,
    return503OnClosing: true,
    ajv: { customOptions: { removeAdditional: false } },
    // Malformed URLs and overlong path parameters fail before routing: they still get the envelope.
    frameworkErrors: (error, request, rawReply) => {
      const reply = rawReply as unknown as FastifyReply;
      reply.headers(edge.headers).header('x-request-id', request.id).header('cache-control', 'private, no-store');
      // No resource has an id that long: not found, like any other unknown id.
      const tooLong = error.code === 'FST_ERR_MAX_PARAM_LENGTH';
      return reply
        .code(tooLong ? 404 : 422)
        .type('application/json')
        .send(
          envelope(
            tooLong ? 'NOT_FOUND' : 'VALIDATION_FAILED',
            tooLong ? 'Not found.' : 'The request URL is malformed.',
            false,
            request.id,
          ),
        );
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  if (logging) app.log = logging.logger;
  app.setValidatorCompiler(validatorCompiler);
  // Connection bound per address, security headers, the JSON body parser (depth; bodies of routes that take none).
  // The request id and cache headers are set in the security headers' onRequest hook, right after them: one hook
  // (callback style, no promise) instead of two on every request.
  app.decorateRequest('cachedRouteOptions', null);
  installEdge(app, edge, (request, reply) => {
    reply.header('x-request-id', request.id);
    reply.header('cache-control', routeOptionsOf(request).config?.cache === 'public' ? 'no-store' : 'private, no-store');
  });

  installErrorHandling(app);
  app.addHook('onRoute', documentRoute);
  // Before the auth plugin's check: the reference's routes come from a plugin that takes no route config.
  app.addHook('onRoute', declareApiReferenceRoutes);
  // Metrics and the "request completed" line, once per answered request (http/request-end.ts).
  const requestEndListeners = logging ? [metricsRecorder(ctx.metrics), logging.logCompletion] : [metricsRecorder(ctx.metrics)];
  observeRequestEnds(app, requestEndListeners);
  await app.register(swagger, {
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === 'string' ? json.$id : `def-${i}`) },
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Ark API', version: '3.0.0', description: 'GPU rental marketplace: contract version 3' },
      servers: [{ url: ctx.config.publicBaseUrl }],
      components: {
        securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'API key (ark_...) or session token' } },
      },
      security: [{ bearer: [] }],
    },
    // Descriptions, error codes per status and body examples for the reference (http/openapi-docs.ts).
    transformObject: (generated) =>
      'openapiObject' in generated ? completeOpenApiDocument(generated.openapiObject) : generated.swaggerObject,
  });
  app.addSchema(ErrorEnvelope);
  installAuth(app, ctx.authenticator, ctx.clock, {
    machine: async (id) => (await ctx.services.hosting.machines.find(id))?.ownerAccountId ?? null,
  });
  requestEndListeners.push(installIdempotency(app, { store: ctx.store, clock: ctx.clock, secretKey: ctx.config.secretKey, claimLocks }));

  const gateway = installChannelGateway(
    app,
    {
      config: ctx.config,
      store: ctx.store,
      clock: ctx.clock,
      registry: ctx.metrics.registry,
      handlers: ctx.channel,
      identity: ctx.channelIdentity,
      listenConnector,
    },
    // A refused upgrade gets the API's own answer: the envelope, a request id and the security headers.
    { refusalAnswer: (code) => rawErrorAnswer(code, edge.headers), ...gatewayInput },
  );
  registerSystemRoutes(app, ctx);
  for (const register of routeModules) await register(app, ctx);
  // The relay reaches engines through the agent connections this gateway holds.
  registerRelayRoutes(app, ctx, gateway.relay, (machineId) => gateway.isConnected(machineId));
  // So does readiness verification: it reads a model job's engine list through this gateway's agents.
  attachRelay?.({ tunnel: gateway.relay, connectedHere: (machineId) => gateway.isConnected(machineId) });
  // Job logs come the same way, from the agent that keeps them (issue 25 item 2).
  registerJobLogRoutes(app, ctx, gateway.logs, (machineId) => gateway.isConnected(machineId));
  await registerApiReference(app);
  // The web console: pages over the public API above (console/index.ts).
  await registerConsole(app, ctx);
  return { app, ctx, gateway };
}

/** Each area's routes. Order does not matter. */
const routeModules: Array<(app: TypedApp, ctx: AppContext) => void | Promise<void>> = [
  registerPairingRoutes,
  registerPairPageRoutes,
  registerMachineRoutes,
  registerOfferRoutes,
  registerMarketRoutes,
  registerTelemetryRoutes,
  registerNettestRoutes,
  registerVerificationRoutes,
  registerBillingRoutes,
  registerX402Routes,
  registerAccountRoutes,
  registerOAuthRoutes,
  registerAgentRoutes,
  registerWithdrawalAddressRoutes,
  registerSshKeyRoutes,
  registerWithdrawalRoutes,
  registerAdminWithdrawalRoutes,
  registerAdminDepositRoutes,
  registerTemplateRoutes,
  registerQuoteRoutes,
  registerJobRoutes,
  registerSpendCapRoutes,
  registerTicketRoutes,
  registerWebhookRoutes,
  registerAdminAdmissionRoutes,
  registerAdminOperationRoutes,
  registerMcpRoutes,
];
