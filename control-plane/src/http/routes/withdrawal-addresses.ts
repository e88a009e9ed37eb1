import {
  IdempotencyHeaders,
  IdParams,
  Page,
  PageQuery,
  WithdrawalAddress,
  WithdrawalAddressCreateRequest,
  WithdrawalAddressRemoved,
} from '@ark/shared';
import { withdrawalAddressView } from '../../views/withdrawals.js';
import { principalOf } from '../auth.js';
import type { AppContext } from '../context.js';
import { answerInTransaction } from '../idempotency.js';
import { fetchSize } from '../pagination.js';
import { withErrors } from '../schemas.js';
import type { TypedApp } from '../typed-app.js';

export function registerWithdrawalAddressRoutes(app: TypedApp, ctx: AppContext): void {
  const accounts = ctx.services.accounts;

  app.post(
    '/api/v1/withdrawal-addresses',
    {
      config: { auth: { stepUp: 'any' }, idempotent: true },
      schema: {
        summary: 'Register a withdrawal address (step-up required)',
        description:
          'Any scope: an address receives both withdrawals (renter scope) and payouts (host scope), and a request to it still needs ' +
          'the scope of the balance it draws. The step-up is the account holder’s proof (a session, or an agent key stepped up by ' +
          'its sign-in wallet). The zero address is refused (422 VALIDATION_FAILED): nobody holds its key.',
        tags: ['billing'],
        headers: IdempotencyHeaders,
        body: WithdrawalAddressCreateRequest,
        response: withErrors({ 201: WithdrawalAddress }, 403, 409),
      },
    },
    async (request, reply) => {
      const { address, label, network } = request.body;
      const added = await accounts.addWithdrawalAddress(
        { accountId: principalOf(request).accountId, address, network: network ?? 'base', label: label ?? null },
        answerInTransaction(request, reply, 201, withdrawalAddressView),
      );
      return reply.code(201).send(withdrawalAddressView(added));
    },
  );

  app.get(
    '/api/v1/withdrawal-addresses',
    {
      config: { auth: {} },
      schema: {
        summary: 'The caller’s live withdrawal addresses, newest first',
        tags: ['billing'],
        querystring: PageQuery,
        response: withErrors({ 200: Page(WithdrawalAddress) }),
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const scope = `withdrawal-addresses:${principal.accountId}`;
      const after = ctx.paginator.decode<[string, string]>(scope, request.query.cursor);
      const found = await accounts.listWithdrawalAddresses(principal.accountId, after, fetchSize(request.query.limit));
      return ctx.paginator.page(scope, found, request.query.limit, (a) => [a.createdAt, a.id], withdrawalAddressView);
    },
  );

  app.delete(
    '/api/v1/withdrawal-addresses/:id',
    {
      config: { auth: {} },
      schema: {
        summary: 'Remove a withdrawal address; its version is bumped so unsigned transfers to it are no longer paid automatically',
        tags: ['billing'],
        params: IdParams,
        response: withErrors({ 200: WithdrawalAddressRemoved }, 404),
      },
    },
    async (request) => {
      await accounts.removeWithdrawalAddress(principalOf(request).accountId, request.params.id);
      return { removed: true as const };
    },
  );
}
