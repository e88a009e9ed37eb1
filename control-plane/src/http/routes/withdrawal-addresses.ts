import {
  IdempotencyHeaders,
  IdParams,
  Page,
  PageQuery,
  WithdrawalAddress,
  WithdrawalAddressCreateRequest,
  WithdrawalAddressRemoved,
} from '@ark/shared';
import type { AppContext } from '../../app.js';
import { DomainError } from '../../errors.js';
import {
  insertWithdrawalAddress,
  listWithdrawalAddresses,
  removeWithdrawalAddress,
  type WithdrawalAddressRow,
} from '../../store/accounts.js';
import { appendAudit } from '../../store/audit.js';
import { fetchSize } from '../pagination.js';
import { withErrors } from '../schemas.js';
import type { TypedApp } from '../typed-app.js';

export function withdrawalAddressView(row: WithdrawalAddressRow): WithdrawalAddress {
  return {
    id: row.id,
    address: row.address,
    label: row.label,
    network: row.network,
    version: row.version.toString(),
    created_at: row.created_at,
  };
}

export function registerWithdrawalAddressRoutes(app: TypedApp, ctx: AppContext): void {
  const { store, clock } = ctx;

  app.post(
    '/api/v1/withdrawal-addresses',
    {
      config: { auth: { stepUp: 'any' }, idempotent: true },
      schema: {
        summary: 'Register a withdrawal address (step-up required)',
        tags: ['billing'],
        headers: IdempotencyHeaders,
        body: WithdrawalAddressCreateRequest,
        response: withErrors({ 201: WithdrawalAddress }, 403, 409),
      },
    },
    async (request, reply) => {
      const principal = request.principal!;
      const now = clock.now();
      const { address, label, network } = request.body;
      const row = await store.db.transaction().execute(async (trx) => {
        const inserted = await insertWithdrawalAddress(trx, {
          accountId: principal.accountId,
          address,
          network: network ?? 'base',
          label: label ?? null,
          now,
        });
        await appendAudit(trx, {
          at: now,
          actorAccountId: principal.accountId,
          action: 'withdrawal_address.added',
          subject: inserted.id,
          detail: { address, network: inserted.network },
        });
        return inserted;
      });
      return reply.code(201).send(withdrawalAddressView(row));
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
      const principal = request.principal!;
      const scope = `withdrawal-addresses:${principal.accountId}`;
      const after = ctx.paginator.decode<[string, string]>(scope, request.query.cursor);
      const rows = await listWithdrawalAddresses(store.db, principal.accountId, after, fetchSize(request.query.limit));
      return ctx.paginator.page(scope, rows, request.query.limit, (row) => [row.created_at, row.id], withdrawalAddressView);
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
      const principal = request.principal!;
      const now = clock.now();
      const removed = await store.db.transaction().execute(async (trx) => {
        if (!(await removeWithdrawalAddress(trx, principal.accountId, request.params.id, now))) return false;
        await appendAudit(trx, {
          at: now,
          actorAccountId: principal.accountId,
          action: 'withdrawal_address.removed',
          subject: request.params.id,
        });
        return true;
      });
      if (!removed) throw new DomainError('NOT_FOUND', 'No such withdrawal address.');
      return { removed: true as const };
    },
  );
}
