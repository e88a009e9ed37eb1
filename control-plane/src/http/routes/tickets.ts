import {
  AdminTicketQuery,
  IdempotencyHeaders,
  IdParams,
  Page,
  PageQuery,
  TicketCreateRequest,
  TicketDetail,
  TicketMessageRequest,
  TicketSummary,
} from '@ark/shared';
import { Type } from '@sinclair/typebox';
import type { TicketCaller } from '../../domain/tickets/ticket.js';
import type { Principal } from '../../domain/accounts/principal.js';
import { ticketDetailView, ticketSummaryView } from '../../views/tickets.js';
import { isAdminSession, principalOf } from '../auth.js';
import type { AppContext } from '../context.js';
import { answerInTransaction } from '../idempotency.js';
import { fetchSize } from '../pagination.js';
import { withErrors } from '../schemas.js';
import type { TypedApp } from '../typed-app.js';

const NO_BODY = undefined as unknown as null;

const callerOf = (principal: Principal): TicketCaller => ({ accountId: principal.accountId, isAdmin: isAdminSession(principal) });

export function registerTicketRoutes(app: TypedApp, ctx: AppContext): void {
  const tickets = ctx.services.tickets;

  app.post(
    '/api/v1/tickets',
    {
      config: { auth: {}, idempotent: true },
      schema: {
        summary: 'Open a support case, optionally about one of your rentals (as renter or host)',
        tags: ['support'],
        headers: IdempotencyHeaders,
        body: TicketCreateRequest,
        response: withErrors({ 201: TicketSummary }, 404, 409),
      },
    },
    async (request, reply) => {
      const { category, text, job_id } = request.body;
      const opened = await tickets.open(
        { accountId: principalOf(request).accountId, category, text, jobId: job_id ?? null },
        answerInTransaction(request, reply, 201, ticketSummaryView),
      );
      return reply.code(201).send(ticketSummaryView(opened));
    },
  );

  app.get(
    '/api/v1/tickets',
    {
      config: { auth: {} },
      schema: {
        summary: 'The caller’s own tickets (as opener), ordered by id',
        tags: ['support'],
        querystring: PageQuery,
        response: withErrors({ 200: Page(TicketSummary) }),
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const scope = `tickets:${principal.accountId}`;
      const after = ctx.paginator.decode<string>(scope, request.query.cursor);
      const found = await tickets.listOwn(principal.accountId, after, fetchSize(request.query.limit));
      return ctx.paginator.page(scope, found, request.query.limit, (t) => t.id, ticketSummaryView);
    },
  );

  app.get(
    '/api/v1/tickets/:id',
    {
      config: { auth: {} },
      schema: {
        summary: 'A ticket with its messages (plain text, oldest first): its opener, the rental’s host or an admin',
        tags: ['support'],
        params: IdParams,
        response: withErrors({ 200: TicketDetail }, 404),
      },
    },
    async (request) => {
      const { ticket, messages } = await tickets.get(request.params.id, callerOf(principalOf(request)));
      return ticketDetailView(ticket, messages);
    },
  );

  app.post(
    '/api/v1/tickets/:id/messages',
    {
      config: { auth: {}, idempotent: true },
      schema: {
        summary: 'Write on an open case: its opener, the rental’s host or an admin (anyone else 403; a closed case 409)',
        tags: ['support'],
        headers: IdempotencyHeaders,
        params: IdParams,
        body: TicketMessageRequest,
        response: withErrors({ 201: Type.Null({ description: 'Written; no body' }) }, 403, 404, 409),
      },
    },
    async (request, reply) => {
      await tickets.postMessage(
        { ticketId: request.params.id, caller: callerOf(principalOf(request)), text: request.body.text },
        answerInTransaction(request, reply, 201, () => undefined),
      );
      return reply.code(201).send(NO_BODY);
    },
  );

  for (const [action, state] of [
    ['close', 'closed'],
    ['reopen', 'open'],
  ] as const) {
    app.post(
      `/api/v1/tickets/:id/${action}`,
      {
        config: { auth: {}, idempotent: true },
        schema: {
          summary: `${action === 'close' ? 'Close' : 'Reopen'} a case: its opener or an admin`,
          tags: ['support'],
          headers: IdempotencyHeaders,
          params: IdParams,
          response: withErrors({ 200: TicketSummary }, 403, 404, 409),
        },
      },
      async (request, reply) => {
        const changed = await tickets.setState(
          { ticketId: request.params.id, caller: callerOf(principalOf(request)), state },
          answerInTransaction(request, reply, 200, ticketSummaryView),
        );
        return ticketSummaryView(changed);
      },
    );
  }

  app.get(
    '/api/v1/admin/tickets',
    {
      config: { auth: { admin: true } },
      schema: {
        summary: 'The support queue: every ticket, optionally in one state, ordered by id (admin)',
        tags: ['admin'],
        querystring: AdminTicketQuery,
        response: withErrors({ 200: Page(TicketSummary) }),
      },
    },
    async (request) => {
      const scope = `admin-tickets:${request.query.state ?? 'all'}`;
      const after = ctx.paginator.decode<string>(scope, request.query.cursor);
      const found = await tickets.queue(request.query.state, after, fetchSize(request.query.limit));
      return ctx.paginator.page(scope, found, request.query.limit, (t) => t.id, ticketSummaryView);
    },
  );
}
