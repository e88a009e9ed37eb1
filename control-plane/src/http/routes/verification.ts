import { IdempotencyHeaders, IdParams, MachineVerificationView, SelftestQueued } from '@ark/shared';
import type { Principal } from '../../domain/accounts/principal.js';
import { DomainError } from '../../errors.js';
import type { QueuedCommand } from '../../services/hosting/index.js';
import { machineVerificationView, selftestQueuedView } from '../../views/verification.js';
import { principalOf } from '../auth.js';
import type { AppContext } from '../context.js';
import { answerInTransaction } from '../idempotency.js';
import { withErrors } from '../schemas.js';
import type { TypedApp } from '../typed-app.js';

/** Public reads of the verification view per address and minute (each reads up to 10 receipts of 48 KiB at most). */
const VERIFICATION_READS_PER_MIN = 120;

/** Admins act on any machine, signed in with a session (as assertOwnerOrAdmin judges). */
const isAdmin = (p: Principal): boolean => p.role === 'admin' && p.authMethod === 'session';

/** Hardware receipts (issue 24 item 2): the public verification view and a self-test on request. */
export function registerVerificationRoutes(app: TypedApp, ctx: AppContext): void {
  const hosting = ctx.services.hosting;

  app.get(
    '/api/v1/machines/:id/verification',
    {
      config: { auth: 'public', cache: 'public' },
      onRequest: async (request) => {
        const allowed = await ctx.rateLimiter.consume(`verification:${request.ip}`, VERIFICATION_READS_PER_MIN, 60_000, ctx.clock.now());
        if (!allowed) throw new DomainError('UNAVAILABLE');
      },
      schema: {
        summary: 'A machine’s signed hardware receipts (public)',
        description:
          'Public, no authentication; rate limited per address (429 UNAVAILABLE). The machine’s enrolled ed25519 public key, its latest ' +
          'self-test receipts exactly as the machine signed them with their signatures, its score and verified_at, whether a receipt that ' +
          'contradicts its declared hardware keeps it unlisted, and how to check the receipts yourself (`ark machines verify ID`).',
        security: [],
        params: IdParams,
        response: withErrors({ 200: MachineVerificationView }, 404),
      },
    },
    async (request) => {
      const record = await hosting.verification(request.params.id);
      if (record === null) throw new DomainError('NOT_FOUND');
      return machineVerificationView(record);
    },
  );

  app.post(
    '/api/v1/hosts/machines/:id/selftest',
    {
      config: { auth: { scope: 'host', owner: 'machine' }, idempotent: true },
      schema: {
        summary: 'Queue a hardware self-test',
        description:
          'Host owner or admin; no body. Queues a run_selftest command (the benchmark image of ARK_SELFTEST_IMAGE, by digest, or ' +
          'identity only when none is configured); the agent answers with a signed hardware receipt, shown by ' +
          'GET /api/v1/machines/{id}/verification. A receipt that agrees with the declared hardware lists an unlisted machine again.',
        params: IdParams,
        headers: IdempotencyHeaders,
        response: withErrors({ 202: SelftestQueued }, 404, 409),
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const toBody = (queued: QueuedCommand) => selftestQueuedView(request.params.id, queued);
      const queued = await hosting.queueSelftest(
        { accountId: principal.accountId, admin: isAdmin(principal) },
        request.params.id,
        answerInTransaction(request, reply, 202, toBody),
      );
      return reply.code(202).send(toBody(queued));
    },
  );
}
