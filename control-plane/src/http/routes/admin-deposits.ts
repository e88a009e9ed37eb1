import {
  AdminDeposit,
  AdminDepositsQuery,
  DepositResolution,
  DepositResolutionRequest,
  IdempotencyHeaders,
  IdParams,
  Page,
} from '@ark/shared';
import { adminDepositView, depositResolutionView } from '../../views/deposits.js';
import { principalOf } from '../auth.js';
import type { AppContext } from '../context.js';
import { answerInTransaction } from '../idempotency.js';
import { fetchSize } from '../pagination.js';
import { withErrors } from '../schemas.js';
import type { TypedApp } from '../typed-app.js';

/**
 * Held and refundable deposits (issue 22): the operators' queue, and the two ways home for a HELD deposit that does
 * not fit the balance cap: credit it with a recorded override, or refund it to its sender through the payout path.
 * Admin interactive sessions only (API keys answer 403); the actions need a fresh TOTP step-up and an
 * Idempotency-Key, and are audited with the admin and the reason.
 */
export function registerAdminDepositRoutes(app: TypedApp, ctx: AppContext): void {
  const deposits = ctx.services.deposits;

  app.get(
    '/api/v1/admin/deposits',
    {
      config: { auth: { admin: true } },
      schema: {
        summary: 'Deposits of every account in one state, oldest final first: HELD (the default), BELOW_MINIMUM, REFUNDING, REFUNDED',
        description:
          'Admin session. `needs_operator` marks a HELD deposit bigger than the balance cap itself (room never comes); `refund_refusal` says why one cannot go back to its sender (null: it can).',
        tags: ['admin'],
        querystring: AdminDepositsQuery,
        response: withErrors({ 200: Page(AdminDeposit) }, 403),
      },
    },
    async (request) => {
      const state = request.query.state ?? 'HELD';
      const scope = `admin-deposits:${state}`;
      const after = ctx.paginator.decode<[string, string]>(scope, request.query.cursor);
      const found = await deposits.forOperators(state, after, fetchSize(request.query.limit));
      return ctx.paginator.page(scope, found, request.query.limit, (o) => [o.deposit.finalAt, o.deposit.id], adminDepositView);
    },
  );

  app.post(
    '/api/v1/admin/deposits/:id/credit',
    {
      config: { auth: { admin: true, stepUp: 'totp' }, idempotent: true },
      schema: {
        summary: 'Credit a HELD deposit although it does not fit the balance cap: a recorded override (CREDITED)',
        description:
          'Admin session plus a fresh TOTP step-up; audited with the admin and the reason. Lifts the cap only: the credit is the deposit’s own exactly-once posting, one posting’s bound (AMOUNT_TOO_LARGE) and paused admission (ADMISSIONS_PAUSED) still apply. A deposit already CREDITED answers 200 with `already: true`; one not HELD answers 409 DEPOSIT_NOT_HELD.',
        tags: ['admin'],
        headers: IdempotencyHeaders,
        params: IdParams,
        body: DepositResolutionRequest,
        response: withErrors({ 200: DepositResolution }, 403, 404, 409, 422, 503),
      },
    },
    async (request, reply) => {
      const result = await deposits.credit(
        { depositId: request.params.id, adminAccountId: principalOf(request).accountId, reason: request.body.reason },
        answerInTransaction(request, reply, 200, depositResolutionView),
      );
      return reply.code(200).send(depositResolutionView(result));
    },
  );

  app.post(
    '/api/v1/admin/deposits/:id/refund',
    {
      config: { auth: { admin: true, stepUp: 'totp' }, idempotent: true },
      schema: {
        summary: 'Refund a HELD deposit to its sender on chain through the payout path (REFUNDING, then REFUNDED once final)',
        description:
          'Admin session plus a fresh TOTP step-up; audited with the admin and the reason. The payout wallet pays the deposit’s amount back to the transfer’s sender exactly once (checks, nonce, broadcast, finality, as payouts); a refund that fails on chain leaves the deposit HELD again. Only USDC on the primary network with a known sender can be refunded (409 DEPOSIT_NOT_REFUNDABLE otherwise: credit it instead); 503 without a payout rail. A deposit already refunding answers 202 with `already: true`.',
        tags: ['admin'],
        headers: IdempotencyHeaders,
        params: IdParams,
        body: DepositResolutionRequest,
        response: withErrors({ 202: DepositResolution }, 403, 404, 409, 422, 503),
      },
    },
    async (request, reply) => {
      const result = await deposits.refund(
        { depositId: request.params.id, adminAccountId: principalOf(request).accountId, reason: request.body.reason },
        answerInTransaction(request, reply, 202, depositResolutionView),
      );
      return reply.code(202).send(depositResolutionView(result));
    },
  );
}
