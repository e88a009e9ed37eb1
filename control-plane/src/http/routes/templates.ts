import {
  IdempotencyHeaders,
  IdParams,
  Page,
  Template,
  TemplateListQuery,
  TemplateQualification,
  TemplateQualificationRequest,
} from '@ark/shared';
import { templateFilterFrom } from '../../domain/templates/filters.js';
import { qualificationView, templateView } from '../../views/templates.js';
import { principalOf } from '../auth.js';
import type { AppContext } from '../context.js';
import { answerInTransaction } from '../idempotency.js';
import { fetchSize } from '../pagination.js';
import { withErrors } from '../schemas.js';
import type { TypedApp } from '../typed-app.js';

export function registerTemplateRoutes(app: TypedApp, ctx: AppContext): void {
  const templates = ctx.services.templates;
  app.get(
    '/api/v1/templates',
    {
      config: { auth: 'public', cache: 'public' },
      schema: {
        tags: ['catalog'],
        summary: 'The public template catalog: published templates only, ordered by name',
        security: [],
        querystring: TemplateListQuery,
        response: withErrors({ 200: Page(Template) }),
      },
    },
    async (request) => {
      const { cursor, limit, ...filters } = request.query;
      // The filters are part of the scope: a cursor from a differently filtered list is refused.
      const filter = templateFilterFrom(filters);
      const scope = `templates:${filter.kind ?? ''}:${filter.backend ?? ''}:${filter.maxMinVramBytes ?? ''}`;
      const after = ctx.paginator.decode<[string, string]>(scope, cursor);
      const found = await templates.list(filter, after, fetchSize(limit));
      return ctx.paginator.page(
        scope,
        found,
        limit,
        (t) => [t.name, t.id],
        (t) => templateView(t, true),
      );
    },
  );

  app.get(
    '/api/v1/templates/:id',
    {
      config: { auth: 'public', cache: 'public' },
      schema: {
        tags: ['catalog'],
        summary: 'One published template',
        security: [],
        params: IdParams,
        response: withErrors({ 200: Template }, 404),
      },
    },
    async (request) => templateView(await templates.published(request.params.id), true),
  );

  app.post(
    '/api/v1/admin/templates/:id/qualifications',
    {
      config: { auth: { admin: true }, idempotent: true },
      schema: {
        tags: ['admin'],
        summary: 'Qualify a machine to run a template (admin); publishes the template. Audited.',
        params: IdParams,
        headers: IdempotencyHeaders,
        body: TemplateQualificationRequest,
        response: withErrors({ 201: TemplateQualification }, 403, 404, 409),
      },
    },
    async (request, reply) => {
      const result = await templates.qualify(
        {
          templateId: request.params.id,
          machineId: request.body.machine_id,
          actorAccountId: principalOf(request).accountId,
          reason: request.body.reason,
          via: 'api',
        },
        answerInTransaction(request, reply, 201, qualificationView),
      );
      return reply.code(201).send(qualificationView(result));
    },
  );
}
