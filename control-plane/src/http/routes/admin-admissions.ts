import {
  AcceptanceAuthorization,
  AcceptanceAuthorizationCreateRequest,
  AdmissionState,
  AdmissionStatus,
  AdmissionsSetRequest,
  IdempotencyHeaders,
} from '@ark/shared';
import { acceptanceAuthorizationView, admissionStateView, admissionStatusView } from '../../views/admissions.js';
import { principalOf } from '../auth.js';
import type { AppContext } from '../context.js';
import { answerInTransaction } from '../idempotency.js';
import { withErrors } from '../schemas.js';
import type { TypedApp } from '../typed-app.js';

/** Contract part 4 (Administration): the admission switch and the acceptance authorizations that pass it. */
export function registerAdminAdmissionRoutes(app: TypedApp, ctx: AppContext): void {
  const admissions = ctx.services.admissions;

  app.post(
    '/api/v1/admin/admissions',
    {
      // Admin with recent MFA: an interactive admin session with a fresh TOTP step-up.
      config: { auth: { admin: true, stepUp: 'totp' }, idempotent: true },
      schema: {
        tags: ['admin'],
        summary: 'Pause or resume public admission (admin session with a fresh TOTP step-up). Audited.',
        description:
          'While paused, new reservations, host offer publication, funding credits (deposits are HELD, x402 top-ups answer 503), payouts ' +
          'and withdrawals are refused with 503 ADMISSIONS_PAUSED unless they present a valid acceptance authorization ' +
          '(header Ark-Acceptance-Authorization), spent once. Running jobs are never stopped and keep being metered. Resuming credits ' +
          'the deposits HELD meanwhile, per account oldest first.',
        headers: IdempotencyHeaders,
        body: AdmissionsSetRequest,
        response: withErrors({ 202: AdmissionState }, 403, 409),
      },
    },
    async (request, reply) => {
      const state = await admissions.set(
        { adminAccountId: principalOf(request).accountId, enabled: request.body.enabled, reason: request.body.reason },
        answerInTransaction(request, reply, 202, admissionStateView),
      );
      return reply.code(202).send(admissionStateView(state));
    },
  );

  app.get(
    '/api/v1/admin/admissions',
    {
      config: { auth: { admin: true } },
      schema: {
        tags: ['admin'],
        summary: 'The admission state (admin session)',
        response: withErrors({ 200: AdmissionStatus }, 403),
      },
    },
    async () => admissionStatusView(await admissions.status()),
  );

  app.post(
    '/api/v1/admin/acceptance-authorizations',
    {
      config: { auth: { admin: true, stepUp: 'totp' }, idempotent: true },
      schema: {
        tags: ['admin'],
        summary: 'Issue a single-use acceptance authorization (admin session with a fresh TOTP step-up). Audited.',
        description:
          'Lets exactly one operation of one kind by one account through while admission is paused, until expires_at (1 minute to 7 ' +
          'days ahead). The client presents its id in the Ark-Acceptance-Authorization header; a funding credit (a deposit) consumes the ' +
          "account's oldest one by itself.",
        headers: IdempotencyHeaders,
        body: AcceptanceAuthorizationCreateRequest,
        response: withErrors({ 201: AcceptanceAuthorization }, 403, 404, 409),
      },
    },
    async (request, reply) => {
      const issued = await admissions.issueAuthorization(
        {
          adminAccountId: principalOf(request).accountId,
          accountId: request.body.account_id,
          kind: request.body.kind,
          expiresAt: new Date(request.body.expires_at),
          reason: request.body.reason,
        },
        answerInTransaction(request, reply, 201, acceptanceAuthorizationView),
      );
      return reply.code(201).send(acceptanceAuthorizationView(issued));
    },
  );
}
