import { Type } from '@sinclair/typebox';
import { sql } from 'kysely';
import type { AppContext } from '../context.js';
import { registerMetricsRoute } from '../metrics.js';
import type { TypedApp } from '../typed-app.js';

export function registerSystemRoutes(app: TypedApp, ctx: AppContext): void {
  const hide = { hide: true };
  app.get(
    '/healthz',
    { config: { auth: 'public', cache: 'public' }, schema: { ...hide, response: { 200: Type.Object({ status: Type.Literal('ok') }) } } },
    async () => ({
      status: 'ok' as const,
    }),
  );

  app.get('/readyz', { config: { auth: 'public', cache: 'public' }, schema: hide }, async (_request, reply) => {
    try {
      await sql`select 1`.execute(ctx.store.db);
      return { status: 'ready', store: ctx.store.dialect };
    } catch {
      return reply
        .code(503)
        .send({ error: { code: 'SERVICE_UNAVAILABLE', message: 'The store is not reachable.', retryable: true, request_id: _request.id } });
    }
  });

  // Here unless a second listener serves it (ARK_METRICS_PORT, main.ts).
  if (ctx.config.metricsPort === null) registerMetricsRoute(app, ctx.metrics, ctx.config.metricsToken);

  app.get('/openapi.json', { config: { auth: 'public', cache: 'public' }, schema: hide }, async () => app.swagger());
}
