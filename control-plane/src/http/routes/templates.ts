import {
  IdempotencyHeaders,
  IdParams,
  Page,
  Template,
  TemplateListQuery,
  TemplateQualification,
  TemplateQualificationRequest,
} from '@ark/shared';
import type { AppContext } from '../../app.js';
import { templateFilterFrom } from '../../domain/templates/filters.js';
import { templateView } from '../../domain/templates/template.js';
import { DomainError } from '../../errors.js';
import { findPublishedTemplate, isTemplatePublished, listPublishedTemplates, recordAdminQualification } from '../../store/templates.js';
import { fetchSize } from '../pagination.js';
import { withErrors } from '../schemas.js';
import type { TypedApp } from '../typed-app.js';

export function registerTemplateRoutes(app: TypedApp, ctx: AppContext): void {
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
      const rows = await listPublishedTemplates(ctx.store.db, filter, after, fetchSize(limit));
      return ctx.paginator.page(
        scope,
        rows,
        limit,
        (row) => [row.name, row.id],
        (row) => templateView(row, true),
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
    async (request) => {
      const template = await findPublishedTemplate(ctx.store.db, request.params.id.toLowerCase());
      if (!template) throw new DomainError('TEMPLATE_NOT_FOUND');
      return templateView(template, true);
    },
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
      const principal = request.principal;
      if (!principal) throw new DomainError('UNAUTHENTICATED');
      const templateId = request.params.id.toLowerCase();
      const machineId = request.body.machine_id.toLowerCase();
      const now = ctx.clock.now();
      const result = await ctx.store.db.transaction().execute(async (trx) => {
        const qualification = await recordAdminQualification(trx, {
          templateId,
          machineId,
          now,
          actorAccountId: principal.accountId,
          reason: request.body.reason,
          via: 'api',
        });
        return { qualification, published: await isTemplatePublished(trx, templateId) };
      });
      return reply.code(201).send({
        template_id: result.qualification.templateId,
        machine_id: result.qualification.machineId,
        source: result.qualification.source,
        qualified_at: result.qualification.qualifiedAt,
        published: result.published,
      });
    },
  );
}
