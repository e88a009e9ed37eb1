import { IdParams, Page, PageQuery, SshKey, SshKeyCreateRequest, SshKeyRemoved, IdempotencyHeaders } from '@ark/shared';
import type { SshKeyRecord } from '../../services/accounts/index.js';
import { principalOf } from '../auth.js';
import type { AppContext } from '../context.js';
import { answerInTransaction } from '../idempotency.js';
import { fetchSize } from '../pagination.js';
import { withErrors } from '../schemas.js';
import type { TypedApp } from '../typed-app.js';

const view = (key: SshKeyRecord): SshKey => ({
  id: key.id,
  label: key.label,
  public_key: key.publicKey,
  fingerprint: key.fingerprint,
  created_at: key.createdAt,
});

/**
 * The account's saved SSH public keys (issue 25 item 1; not in contract v3, which has no such operations): the
 * console's rent form offers them. A job still takes its keys in its reservation body.
 */
export function registerSshKeyRoutes(app: TypedApp, ctx: AppContext): void {
  const accounts = ctx.services.accounts;

  app.post(
    '/api/v1/account/ssh-keys',
    {
      config: { auth: {}, idempotent: true },
      schema: {
        summary: 'Save an SSH public key on the account',
        description: 'One OpenSSH public key line of a type jobs accept; the same key twice is 409 SSH_KEY_EXISTS.',
        tags: ['account'],
        headers: IdempotencyHeaders,
        body: SshKeyCreateRequest,
        response: withErrors({ 201: SshKey }, 409),
      },
    },
    async (request, reply) => {
      const added = await accounts.addSshKey(
        { accountId: principalOf(request).accountId, publicKey: request.body.public_key, label: request.body.label ?? null },
        answerInTransaction(request, reply, 201, view),
      );
      return reply.code(201).send(view(added));
    },
  );

  app.get(
    '/api/v1/account/ssh-keys',
    {
      config: { auth: {} },
      schema: {
        summary: 'The account’s saved SSH public keys, newest first',
        tags: ['account'],
        querystring: PageQuery,
        response: withErrors({ 200: Page(SshKey) }),
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const scope = `ssh-keys:${principal.accountId}`;
      const after = ctx.paginator.decode<[string, string]>(scope, request.query.cursor);
      const found = await accounts.listSshKeys(principal.accountId, after, fetchSize(request.query.limit));
      return ctx.paginator.page(scope, found, request.query.limit, (k) => [k.createdAt, k.id], view);
    },
  );

  app.delete(
    '/api/v1/account/ssh-keys/:id',
    {
      config: { auth: {} },
      schema: {
        summary: 'Remove a saved SSH public key (jobs that carry it keep it)',
        tags: ['account'],
        params: IdParams,
        response: withErrors({ 200: SshKeyRemoved }, 404),
      },
    },
    async (request) => {
      await accounts.removeSshKey(principalOf(request).accountId, request.params.id);
      return { removed: true as const };
    },
  );
}
