import { LedgerSummary, LedgerSummaryQuery, SettingsTestRequest, SettingsTestResult } from '@ark/shared';
import type { LedgerSummaryRecord } from '../../services/operations/index.js';
import { DomainError } from '../../errors.js';
import { principalOf } from '../auth.js';
import type { AppContext } from '../context.js';
import { withErrors } from '../schemas.js';
import type { TypedApp } from '../typed-app.js';

const MINUTE_MS = 60_000;

export function ledgerSummaryView(summary: LedgerSummaryRecord): LedgerSummary {
  const t = summary.totals;
  return {
    as_of: summary.asOf.toISOString(),
    from: summary.from,
    to: summary.to,
    totals: {
      available_micro: t.availableMicro.toString(),
      held_micro: t.heldMicro.toString(),
      payable_micro: t.payableMicro.toString(),
      locked_micro: t.lockedMicro.toString(),
      fees_micro: t.feesMicro.toString(),
      money_in_micro: t.moneyInMicro.toString(),
      money_out_micro: t.moneyOutMicro.toString(),
    },
    balanced: summary.balanced,
    days: summary.days.map((d) => ({
      day: d.day,
      fees_earned_micro: d.feesMicro.toString(),
      money_in_micro: d.inMicro.toString(),
      money_out_micro: d.outMicro.toString(),
      postings: Number(d.postings),
    })),
  };
}

/** Contract part 4 (Administration): subsystem tests; and the platform's books (issue 12). */
export function registerAdminOperationRoutes(app: TypedApp, ctx: AppContext): void {
  const operations = ctx.services.operations;

  app.post(
    '/api/v1/admin/settings/test',
    {
      config: { auth: { admin: true } },
      schema: {
        tags: ['admin'],
        summary: 'Test a subsystem against its stored setting (admin session, rate limited). Audited.',
        description:
          'mail: opens and verifies an SMTP session with SMTP_URL; alerts: posts a test alert to ARK_ALERT_WEBHOOK_URL; chain-access: ' +
          'reads the chain id (checked), head and finalized block of every network of ARK_CHAINS; auth-provider: fetches the discovery ' +
          'document of ARK_OIDC_ISSUER. The target always comes from the stored setting, never from the body. 200 {ok, detail} is the ' +
          'real result; detail never carries credentials or RPC URLs.',
        body: SettingsTestRequest,
        response: withErrors({ 200: SettingsTestResult }, 403),
      },
    },
    async (request) => {
      const admin = principalOf(request);
      const allowed = await ctx.rateLimiter.consume(
        `settings-test:${admin.accountId}`,
        ctx.config.operations.settingsTestsPerMinute,
        MINUTE_MS,
        ctx.clock.now(),
      );
      if (!allowed) throw new DomainError('UNAVAILABLE');
      return operations.testSubsystem(admin.accountId, request.body);
    },
  );

  app.get(
    '/api/v1/admin/ledger/summary',
    {
      config: { auth: { admin: true } },
      schema: {
        tags: ['admin'],
        summary: "The platform's books (admin session): balances per kind of account and money moved per UTC day",
        description:
          'Totals now: renters’ available balances, job holds, hosts’ payable, withdrawal locks, fees earned, and all money in and out ' +
          'through external; balanced says every balance sums to zero. Per UTC day of [from, to] (default the last 30 days, at most ' +
          '366): fees earned, money in, money out, postings.',
        querystring: LedgerSummaryQuery,
        response: withErrors({ 200: LedgerSummary }, 403),
      },
    },
    async (request) => ledgerSummaryView(await operations.ledgerSummary(request.query)),
  );
}
