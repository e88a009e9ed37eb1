import { IdempotencyHeaders, SpendCap, SpendCapUpdateRequest } from '@ark/shared';
import { spendCapView } from '../../views/accounts.js';
import { principalOf } from '../auth.js';
import type { AppContext } from '../context.js';
import { answerInTransaction } from '../idempotency.js';
import { withErrors } from '../schemas.js';
import type { TypedApp } from '../typed-app.js';

// The spend-rate cap (issue 10 item 5): an account-wide ceiling on the summed hourly rate of its unstopped jobs.

export function registerSpendCapRoutes(app: TypedApp, ctx: AppContext): void {
  const jobs = ctx.services.jobs;

  app.get(
    '/api/v1/account/spend-cap',
    {
      config: { auth: { scope: 'renter' } },
      schema: {
        tags: ['account'],
        summary: "The account's spend-rate cap and what its jobs commit against it",
        description:
          "Renter scope. cap_micro_per_hour is the account's own cap, or the operator's default (default_cap_micro_per_hour, " +
          'is_default true) while it set none. committed_micro_per_hour sums the total hourly rate (machine rate plus platform fee) of ' +
          'its jobs from RESERVED until they stop (RESERVED, STARTING, RUNNING, RECONCILING, STOPPING); a reservation whose total ' +
          'rate exceeds available_micro_per_hour is refused with 409 SPEND_RATE_CAP_EXCEEDED.',
        response: withErrors({ 200: SpendCap }, 403),
      },
    },
    async (request) => spendCapView(await jobs.readSpendCap(principalOf(request).accountId)),
  );

  app.put(
    '/api/v1/account/spend-cap',
    {
      config: { auth: { scope: 'renter' }, idempotent: true },
      schema: {
        tags: ['account'],
        summary: "Set the account's spend-rate cap (null: back to the operator's default)",
        description:
          'Renter scope. Lowering the cap, or keeping it, needs nothing more: any renter credential, an API key included, may ' +
          'tighten it. Raising the effective cap (a larger value, or null when the default is larger) needs a fresh step-up on ' +
          'this credential (403 STEP_UP_REQUIRED otherwise; POST /api/v1/account/step-up). Every change is audited. A cap under ' +
          'what the running jobs already commit is allowed: it refuses new reservations (409 SPEND_RATE_CAP_EXCEEDED on ' +
          'POST /api/v1/quotes and POST /api/v1/jobs) and never stops a job. Answers the new standing, as GET does.',
        headers: IdempotencyHeaders,
        body: SpendCapUpdateRequest,
        response: withErrors({ 200: SpendCap }, 403, 409),
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const cap = request.body.cap_micro_per_hour;
      const standing = await jobs.changeSpendCap(
        {
          accountId: principal.accountId,
          capMicroPerHour: cap === null ? null : BigInt(cap),
          via: principal.authMethod,
          stepUp: principal.stepUp,
        },
        answerInTransaction(request, reply, 200, spendCapView),
      );
      return spendCapView(standing);
    },
  );
}
