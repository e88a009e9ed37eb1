import {
  AdminWithdrawal,
  AdminWithdrawalsQuery,
  IdempotencyHeaders,
  IdParams,
  Page,
  WithdrawalReviewRequest,
  WithdrawalReviewResult,
} from '@ark/shared';
import { principalOf } from '../auth.js';
import type { AppContext } from '../context.js';
import { answerInTransaction } from '../idempotency.js';
import { fetchSize } from '../pagination.js';
import { withErrors } from '../schemas.js';
import type { TypedApp } from '../typed-app.js';
import { adminWithdrawalView, withdrawalReviewView } from '../../views/withdrawals.js';

/** Contract part 4, Administration: withdrawal review. Admin interactive sessions only; API keys answer 403. */
export function registerAdminWithdrawalRoutes(app: TypedApp, ctx: AppContext): void {
  const withdrawals = ctx.services.withdrawals;

  app.post(
    '/api/v1/admin/withdrawals/:id/review',
    {
      config: { auth: { admin: true, stepUp: 'totp' }, idempotent: true },
      schema: {
        summary: 'Review an unsigned withdrawal or payout: approve (INTENT, every check runs again) or reject (FAILED, the lock returned)',
        description: 'Admin session plus a fresh TOTP step-up. Audited with the admin and the reason. 409 once a nonce is pinned.',
        tags: ['admin'],
        headers: IdempotencyHeaders,
        params: IdParams,
        body: WithdrawalReviewRequest,
        response: withErrors({ 202: WithdrawalReviewResult }, 403, 404, 409),
      },
    },
    async (request, reply) => {
      const result = await withdrawals.review(
        {
          id: request.params.id,
          adminAccountId: principalOf(request).accountId,
          decision: request.body.decision,
          reason: request.body.reason,
        },
        answerInTransaction(request, reply, 202, withdrawalReviewView),
      );
      return reply.code(202).send(withdrawalReviewView(result));
    },
  );

  app.get(
    '/api/v1/admin/withdrawals',
    {
      config: { auth: { admin: true } },
      schema: {
        summary: 'Withdrawals and payouts of every account, oldest first; `state=UNSIGNED` is the review queue (admin session)',
        tags: ['admin'],
        querystring: AdminWithdrawalsQuery,
        response: withErrors({ 200: Page(AdminWithdrawal) }, 403),
      },
    },
    async (request) => {
      const state = request.query.state ?? null;
      const scope = `admin-withdrawals:${state ?? '*'}`;
      const after = ctx.paginator.decode<[string, string]>(scope, request.query.cursor);
      const found = await withdrawals.listByState(state, after, fetchSize(request.query.limit));
      return ctx.paginator.page(scope, found, request.query.limit, (w) => [w.createdAt, w.id], adminWithdrawalView);
    },
  );
}
