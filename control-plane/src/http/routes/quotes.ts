import { IdempotencyHeaders, Quote, QuoteRequest } from '@ark/shared';
import type { AppContext } from '../context.js';
import { quoteView } from '../../views/jobs.js';
import { principalOf } from '../auth.js';
import { answerInTransaction } from '../idempotency.js';
import { withErrors } from '../schemas.js';
import type { TypedApp } from '../typed-app.js';

export function registerQuoteRoutes(app: TypedApp, ctx: AppContext): void {
  const jobs = ctx.services.jobs;

  app.post(
    '/api/v1/quotes',
    {
      config: { auth: { scope: 'renter', verified: true }, idempotent: true },
      schema: {
        tags: ['jobs'],
        summary: 'Quote an offer',
        description:
          'Renter scope; a verified email or a wallet-created account. A binding price for one offer, valid 60 seconds: the machine must be live, ' +
          'online and healthy, the offer listed (and at expected_version when given), [now, now + duration_limit_s] inside its availability and ' +
          'free of maintenance windows, and enough GPUs free (a machine without GPUs is rented whole: gpu_count 1). Exactly one of template_id ' +
          "(its runtime for the machine's backend, cuda) and image_digest. budget_micro defaults to estimated_total_micro. The meter starts at " +
          "verified readiness. A quote whose total rate would not fit under the account's spend-rate cap now is refused (409 " +
          'SPEND_RATE_CAP_EXCEEDED, GET /api/v1/account/spend-cap); the reservation checks the cap again.',
        headers: IdempotencyHeaders,
        body: QuoteRequest,
        response: withErrors({ 201: Quote }, 403, 404, 409),
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const quote = await jobs.createQuote(principal.accountId, request.body, answerInTransaction(request, reply, 201, quoteView));
      return reply.code(201).send(quoteView(quote));
    },
  );
}
