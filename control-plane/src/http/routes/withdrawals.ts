import { HostEarnings, IdempotencyHeaders, IdParams, Page, PageQuery, Withdrawal, WithdrawalCreateRequest } from '@ark/shared';
import { defaultWithdrawalBalance, scopeForWithdrawal, withdrawalKindOf } from '../../domain/withdrawals/states.js';
import { earningsPosition } from '../../services/withdrawals/index.js';
import { earningsItemView, hostEarningsView, withdrawalView } from '../../views/withdrawals.js';
import { principalOf, requireScope } from '../auth.js';
import type { AppContext } from '../context.js';
import { answerInTransaction } from '../idempotency.js';
import { fetchSize } from '../pagination.js';
import { withErrors } from '../schemas.js';
import type { TypedApp } from '../typed-app.js';

/** The request header that carries an acceptance authorization while admissions are paused. */
const ACCEPTANCE_AUTHORIZATION_HEADER = 'ark-acceptance-authorization';

export function registerWithdrawalRoutes(app: TypedApp, ctx: AppContext): void {
  const withdrawals = ctx.services.withdrawals;

  app.post(
    '/api/v1/withdrawals',
    {
      config: { auth: { stepUp: 'any', scopeInBody: true }, idempotent: true },
      schema: {
        summary:
          'Withdraw the available balance or be paid out payable (matured) earnings, in USDC on the primary network; step-up required',
        description:
          'Any account may hold both balances; `balance` names the one drawn: `available` is a withdrawal and needs the renter scope, ' +
          '`payable` a payout and needs the host scope (403 SCOPE_REQUIRED otherwise: a step-up never stands in for a scope). A request ' +
          'naming no balance draws payable for a host-role account and available for any other (kept for older clients). An API key ' +
          "is stepped up only by its account's sign-in wallet (agent accounts); people step up an interactive session. The amount is " +
          'locked in the ledger in the same transaction. The request is then paid automatically, or held UNSIGNED for an ' +
          "admin's review (over the review threshold, a new address, over the daily limit, the account's first). While admissions are " +
          'paused, only a request presenting a valid acceptance authorization (header Ark-Acceptance-Authorization) is taken.',
        tags: ['billing'],
        headers: IdempotencyHeaders,
        body: WithdrawalCreateRequest,
        response: withErrors({ 202: Withdrawal }, 403, 404, 409, 503),
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const kind = withdrawalKindOf(request.body.balance ?? defaultWithdrawalBalance(principal.role));
      // Checked here, not at onRequest: the balance, and so the scope, is in the body.
      requireScope(principal, scopeForWithdrawal(kind));
      const authorization = request.headers[ACCEPTANCE_AUTHORIZATION_HEADER];
      const withdrawal = await withdrawals.request(
        {
          accountId: principal.accountId,
          kind,
          amountMicro: BigInt(request.body.amount_micro),
          withdrawalAddressId: request.body.withdrawal_address_id,
          network: request.body.network ?? null,
          authorization: typeof authorization === 'string' ? authorization : null,
        },
        answerInTransaction(request, reply, 202, withdrawalView),
      );
      return reply.code(202).send(withdrawalView(withdrawal));
    },
  );

  app.get(
    '/api/v1/withdrawals',
    {
      config: { auth: {} },
      schema: {
        summary: 'The caller’s withdrawals and payouts, newest first',
        tags: ['billing'],
        querystring: PageQuery,
        response: withErrors({ 200: Page(Withdrawal) }),
      },
    },
    async (request) => {
      const accountId = principalOf(request).accountId;
      const scope = `withdrawals:${accountId}`;
      const after = ctx.paginator.decode<[string, string]>(scope, request.query.cursor);
      const found = await withdrawals.list(accountId, after, fetchSize(request.query.limit));
      return ctx.paginator.page(scope, found, request.query.limit, (w) => [w.createdAt, w.id], withdrawalView);
    },
  );

  app.get(
    '/api/v1/withdrawals/:id',
    {
      config: { auth: {} },
      schema: {
        summary: 'One of the caller’s withdrawals or payouts: state, transaction hash, network, fee',
        description: 'Anyone else’s answers 404.',
        tags: ['billing'],
        params: IdParams,
        response: withErrors({ 200: Withdrawal }, 404),
      },
    },
    async (request) => withdrawalView(await withdrawals.get(principalOf(request).accountId, request.params.id)),
  );

  app.get(
    '/api/v1/hosts/earnings',
    {
      config: { auth: { scope: 'host' } },
      schema: {
        summary:
          'The host’s earnings: pending (not matured, with the next maturity), payable, locked in payouts, paid out, a history of earnings per job and payouts (newest first), and automatic credits taken from them',
        tags: ['hosts'],
        querystring: PageQuery,
        response: withErrors({ 200: HostEarnings }, 403),
      },
    },
    async (request) => {
      const accountId = principalOf(request).accountId;
      const scope = `earnings:${accountId}`;
      const after = ctx.paginator.decode<[string, string]>(scope, request.query.cursor);
      const earnings = await withdrawals.earnings(accountId, after, fetchSize(request.query.limit));
      return hostEarningsView(earnings, ctx.paginator.page(scope, earnings.items, request.query.limit, earningsPosition, earningsItemView));
    },
  );
}
