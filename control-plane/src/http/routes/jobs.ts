import {
  ACCEPTANCE_AUTHORIZATION_HEADER,
  AdmittedIdempotencyHeaders,
  BudgetExtensionRequest,
  BudgetExtensionResult,
  IdempotencyHeaders,
  IdParams,
  Job,
  JobAccess,
  JobCreated,
  JobCreateRequest,
  JobEvent,
  JobListQuery,
  JobStopRequest,
  JobStopResult,
  Page,
  PageQuery,
} from '@ark/shared';
import type { AppContext } from '../context.js';
import type { StopAnswerState } from '../../domain/jobs/states.js';
import { DomainError } from '../../errors.js';
import type { BudgetExtended } from '../../services/jobs/index.js';
import { budgetExtensionView, jobAccessView, jobCreatedView, jobEventView, jobStopView, jobView } from '../../views/jobs.js';
import { assertOwnerOrAdmin, isAdminSession, principalOf } from '../auth.js';
import { answerInTransaction } from '../idempotency.js';
import { fetchSize } from '../pagination.js';
import { withErrors } from '../schemas.js';
import type { TypedApp } from '../typed-app.js';

export function registerJobRoutes(app: TypedApp, ctx: AppContext): void {
  const { clock } = ctx;
  const jobs = ctx.services.jobs;

  app.post(
    '/api/v1/jobs',
    {
      config: { auth: { scope: 'renter', verified: true }, idempotent: true },
      schema: {
        tags: ['jobs'],
        summary: 'Reserve a quoted machine',
        description:
          "In one transaction: consumes the quote (QUOTE_EXPIRED, QUOTE_ALREADY_USED; someone else's quote is 404), snapshots the rate and the " +
          "host-availability ceiling, checks the account's spend-rate cap (SPEND_RATE_CAP_EXCEEDED, 409, nothing changed: the summed total " +
          'hourly rate of its jobs from RESERVED until they stop, plus this one, must stay within cap_micro_per_hour of ' +
          'GET /api/v1/account/spend-cap), holds budget_micro from the available balance (INSUFFICIENT_BALANCE, nothing changed) and queues the launch ' +
          'for the machine. ssh_public_keys are OpenSSH public key lines; env names starting with ARK_ are reserved. Poll GET /api/v1/jobs/{id}. ' +
          'While admission is paused: 503 ADMISSIONS_PAUSED, unless the Ark-Acceptance-Authorization header names a valid authorization (spent once).',
        headers: AdmittedIdempotencyHeaders,
        body: JobCreateRequest,
        response: withErrors({ 202: JobCreated }, 403, 404, 409, 503),
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const reserved = await jobs.reserve(principal.accountId, request.body, answerInTransaction(request, reply, 202, jobCreatedView), {
        acceptanceAuthorization: request.headers[ACCEPTANCE_AUTHORIZATION_HEADER],
      });
      return reply.code(202).send(jobCreatedView(reserved));
    },
  );

  app.get(
    '/api/v1/jobs',
    {
      config: { auth: { scope: 'renter' } },
      schema: {
        tags: ['jobs'],
        summary: 'List your jobs',
        description: "The caller's jobs, newest first; optionally only those in one state.",
        querystring: JobListQuery,
        response: withErrors({ 200: Page(Job) }, 403),
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const scope = `jobs:${principal.accountId}:${request.query.state ?? ''}`;
      const after = ctx.paginator.decode<[string, string]>(scope, request.query.cursor);
      const filter = request.query.state !== undefined ? { state: request.query.state } : {};
      const page = await jobs.reads.listOfAccount(principal.accountId, filter, after, fetchSize(request.query.limit));
      const now = clock.now();
      return ctx.paginator.page(
        scope,
        page,
        request.query.limit,
        (job) => [job.createdAt.toISOString(), job.id],
        (job) => jobView(job, now),
      );
    },
  );

  app.get(
    '/api/v1/jobs/:id',
    {
      config: { auth: { scope: 'renter' } },
      schema: {
        tags: ['jobs'],
        summary: 'Read a job',
        description:
          'Owner or admin; anyone else gets 404. Money, milliseconds and versions are decimal strings. job_version is the version a budget ' +
          'extension names as expected_job_version: it changes with the state, funding or fence, never with metering progress.',
        params: IdParams,
        response: withErrors({ 200: Job }, 403, 404),
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const job = await jobs.reads.find(request.params.id);
      if (!job) throw new DomainError('NOT_FOUND');
      assertOwnerOrAdmin(principal, job.accountId);
      return jobView(job, clock.now());
    },
  );

  app.get(
    '/api/v1/jobs/:id/access',
    {
      config: { auth: { scope: 'renter' } },
      schema: {
        tags: ['jobs'],
        summary: 'How to reach a job',
        description:
          "Renter owner only (anyone else: 404). mode execution while RUNNING: ssh and the template's http(s) endpoints, expiring at " +
          'funded_through, api_key for model-kind jobs; mode retrieval-read-only (SFTP on the same port) while STOPPED inside the retrieval ' +
          'window. Any other state: 403 JOB_ACCESS_UNAVAILABLE.',
        params: IdParams,
        response: withErrors({ 200: JobAccess }, 403, 404),
      },
    },
    async (request) => {
      const principal = principalOf(request);
      return jobAccessView(await jobs.reads.access(request.params.id, principal.accountId));
    },
  );

  app.post(
    '/api/v1/jobs/:id/stop',
    {
      config: { auth: { scope: 'renter' }, idempotent: true },
      schema: {
        tags: ['jobs'],
        summary: 'Stop a job',
        description:
          'Renter owner or admin. Before readiness it cancels the launch; while running it stops the container (the final meter receipt ' +
          'follows). When the machine confirms, the job is STOPPED and its unspent hold is back in the available balance in the same ' +
          'step (a hold_released job event); the retrieval window that opens then holds files, not money. A repeat answers STOPPING or ' +
          'the terminal result (STOPPED, CLEANING, CLOSED). A failed job answers 409 JOB_NOT_STOPPABLE.',
        params: IdParams,
        headers: IdempotencyHeaders,
        body: JobStopRequest,
        response: withErrors({ 202: JobStopResult }, 403, 404, 409),
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const toBody = (state: StopAnswerState) => jobStopView(request.params.id, state);
      const state = await jobs.stop(
        request.params.id,
        { accountId: principal.accountId, admin: isAdminSession(principal) },
        request.body.reason,
        answerInTransaction(request, reply, 202, toBody),
      );
      return reply.code(202).send(toBody(state));
    },
  );

  app.post(
    '/api/v1/jobs/:id/budget-extension',
    {
      config: { auth: { scope: 'renter', verified: true }, idempotent: true },
      schema: {
        tags: ['jobs'],
        summary: "Extend a job's budget",
        description:
          'Renter owner. Compare-and-set on expected_job_version (JOB_VERSION_MISMATCH) and expected_budget_version (BUDGET_VERSION_MISMATCH); ' +
          'appends one immutable amendment and holds additional_budget_micro from the available balance atomically, bumps budget_version. The ' +
          'rate and the host-availability ceiling stay as reserved (HOST_CEILING_EXCEEDED); the duration limit never shrinks ' +
          '(DURATION_LIMIT_DECREASE). An extension must change something: additional_budget_micro "0" is refused (422 VALIDATION_FAILED, ' +
          'naming the field) unless new_duration_limit_s is longer than the current limit. Rejected once STOPPING begins (JOB_NOT_EXTENDABLE).',
        params: IdParams,
        headers: IdempotencyHeaders,
        body: BudgetExtensionRequest,
        response: withErrors({ 202: BudgetExtensionResult }, 403, 404, 409),
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const toBody = (extended: BudgetExtended) => budgetExtensionView(request.params.id, extended);
      const extended = await jobs.extendBudget(
        request.params.id,
        principal.accountId,
        request.body,
        answerInTransaction(request, reply, 202, toBody),
      );
      return reply.code(202).send(toBody(extended));
    },
  );

  app.get(
    '/api/v1/jobs/:id/events',
    {
      config: { auth: { scope: 'renter' } },
      schema: {
        tags: ['jobs'],
        summary: "A job's events",
        description:
          'Owner or admin. Sequenced from 1, oldest first, cursor-paged. Messages are sanitized (control characters stripped, secrets ' +
          'redacted) and bounded; a job keeps its latest 1000 events.',
        params: IdParams,
        querystring: PageQuery,
        response: withErrors({ 200: Page(JobEvent) }, 403, 404),
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const jobId = request.params.id;
      const owner = await jobs.reads.ownerOf(jobId);
      if (owner === null) throw new DomainError('NOT_FOUND');
      assertOwnerOrAdmin(principal, owner);
      const scope = `job-events:${jobId}`;
      const after = ctx.paginator.decode<string>(scope, request.query.cursor);
      const events = await jobs.reads.events(jobId, after === null ? 0n : BigInt(after), fetchSize(request.query.limit));
      return ctx.paginator.page(scope, events, request.query.limit, (event) => String(event.seq), jobEventView);
    },
  );
}
