import { BillingBalance, toDecimal } from '@ark/shared';
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
        summary: "The caller's prepaid balance: available, and held by its jobs",
        response: withErrors({ 200: BillingBalance }, 403),
      },
    },
    async (request) => {
      const balances = await ctx.services.billing.balances(principalOf(request).accountId);
      return { available_micro: toDecimal(balances.availableMicro), held_micro: toDecimal(balances.heldMicro), currency: 'USDC' as const };
    },
  );
}
