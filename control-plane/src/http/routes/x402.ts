import { parseDecimal, X402PaymentRequired, X402Settling, X402TopUpQuery, X402TopUpResult } from '@ark/shared';
import { Type } from '@sinclair/typebox';
import { encodePaymentRequiredHeader, encodePaymentResponseHeader } from '@x402/core/http';
import { DomainError } from '../../errors.js';
import { TOP_UP_PATH } from '../../services/billing/x402-top-up.js';
import { principalOf } from '../auth.js';
import type { AppContext } from '../context.js';
import { withErrors } from '../schemas.js';
import type { TypedApp } from '../typed-app.js';

/** A payment header is a base64 JSON payload of a few hundred bytes; anything far larger is not one. */
const PAYMENT_HEADER = Type.Optional(Type.String({ minLength: 1, maxLength: 8192 }));

export function registerX402Routes(app: TypedApp, ctx: AppContext): void {
  app.post(
    TOP_UP_PATH,
    {
      config: { auth: { scope: 'renter', verified: true } },
      schema: {
        tags: ['billing'],
        summary:
          "x402 v2 top-up of the API key's account: 402 with the requirements (also base64 in PAYMENT-REQUIRED); pay with PAYMENT-SIGNATURE (or X-PAYMENT); repeat the same payment for its result",
        querystring: X402TopUpQuery,
        headers: Type.Object({ 'payment-signature': PAYMENT_HEADER, 'x-payment': PAYMENT_HEADER }),
        response: withErrors({ 200: X402TopUpResult, 202: X402Settling, 402: X402PaymentRequired }, 403, 404, 409, 503),
      },
    },
    async (request, reply) => {
      const payment = request.headers['payment-signature'] ?? request.headers['x-payment'] ?? null;
      const answer = await ctx.services.x402.topUp({
        accountId: principalOf(request).accountId,
        amountMicro: parseDecimal(request.query.amount_micro),
        payment: typeof payment === 'string' ? payment : null,
      });
      switch (answer.status) {
        case 404:
          throw new DomainError('NOT_FOUND', 'x402 top-ups are not enabled on this server.');
        case 402:
          return reply
            .code(402)
            .header('payment-required', encodePaymentRequiredHeader(answer.body as Parameters<typeof encodePaymentRequiredHeader>[0]))
            .send(answer.body);
        case 202:
          return reply.code(202).send(answer.body);
        case 200: {
          const settlement = encodePaymentResponseHeader(answer.settlement as Parameters<typeof encodePaymentResponseHeader>[0]);
          return reply.code(200).header('payment-response', settlement).header('x-payment-response', settlement).send(answer.body);
        }
      }
    },
  );
}
