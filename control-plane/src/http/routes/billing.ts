import { BillingBalance, toDecimal } from '@ark/shared';
import type { AppContext } from '../../app.js';
import { DomainError } from '../../errors.js';
import { balancesOfOwner } from '../../store/ledger.js';
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
      if (!request.principal) throw new DomainError('UNAUTHENTICATED');
      const balances = await balancesOfOwner(ctx.store.db, request.principal.accountId);
      return { available_micro: toDecimal(balances.availableMicro), held_micro: toDecimal(balances.heldMicro), currency: 'USDC' as const };
    },
  );
}
