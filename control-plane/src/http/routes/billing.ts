import { BillingBalance, BillingBalanceQuery, DepositAddress } from '@ark/shared';
import { type DepositPosition, depositPosition } from '../../services/billing/deposit-history.js';
import { type IntentPosition, topUpPosition } from '../../services/billing/x402-index.js';
import { billingBalanceView, depositAddressView, depositView, topUpView } from '../../views/deposits.js';
import { stateUnavailable } from '../../errors.js';
import { fetchSize } from '../pagination.js';
import { principalOf } from '../auth.js';
import type { AppContext } from '../context.js';
import { withErrors } from '../schemas.js';
import type { TypedApp } from '../typed-app.js';

export function registerBillingRoutes(app: TypedApp, ctx: AppContext): void {
  app.get(
    '/api/v1/billing/balance',
    {
      config: { auth: { scope: 'renter' } },
      schema: {
        tags: ['billing'],
        summary:
          "The caller's prepaid balance: available, held by its jobs, its deposits and its x402 top-ups (each cursor-paged, newest first), and its automatic credits",
        querystring: BillingBalanceQuery,
        response: withErrors({ 200: BillingBalance }, 403),
      },
    },
    async (request) => {
      const accountId = principalOf(request).accountId;
      const scope = `deposits:${accountId}`;
      const after = ctx.paginator.decode<DepositPosition>(scope, request.query.cursor);
      const topUpScope = `top-ups:${accountId}`;
      const topUpsAfter = ctx.paginator.decode<IntentPosition>(topUpScope, request.query.top_ups_cursor);
      const [balances, deposits, topUps, credits] = await Promise.all([
        ctx.services.billing.balances(accountId),
        ctx.services.deposits.history(accountId, after, fetchSize(request.query.limit)),
        ctx.services.x402.history(accountId, topUpsAfter, fetchSize(request.query.limit)),
        ctx.services.billing.jobCredits(accountId, fetchSize(request.query.limit) - 1),
      ]);
      return billingBalanceView(
        balances,
        ctx.paginator.page(scope, deposits, request.query.limit, depositPosition, depositView),
        ctx.paginator.page(topUpScope, topUps, request.query.limit, topUpPosition, topUpView),
        credits,
      );
    },
  );

  app.get(
    '/api/v1/billing/deposit-address',
    {
      config: { auth: { scope: 'renter' } },
      schema: {
        tags: ['billing'],
        summary:
          "The caller's deposit address (created on first call, never changes), the networks and assets it takes, and recent deposits",
        response: withErrors({ 200: DepositAddress }, 403, 503),
      },
    },
    async (request) => {
      const address = await ctx.services.deposits.address(principalOf(request).accountId);
      // Contract part 7: 503 UNAVAILABLE, retryable, when deposit addresses are not configured.
      if (address === null) throw stateUnavailable('Deposit addresses are not configured on this server.');
      return depositAddressView(address);
    },
  );
}
