import { Fleet, LedgerSummary, LedgerSummaryQuery, SettingsTestRequest, SettingsTestResult } from '@ark/shared';
import { DomainError } from '../../errors.js';
import { ledgerSummaryView } from '../../views/ledger.js';
import { fleetView } from '../../views/operations.js';
import { principalOf } from '../auth.js';
import type { AppContext } from '../context.js';
import { withErrors } from '../schemas.js';
import type { TypedApp } from '../typed-app.js';

const MINUTE_MS = 60_000;

/** Contract part 4 (Administration): subsystem tests; the platform's books (issue 12); the fleet (issue 13). */
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

  app.get(
    '/api/v1/admin/fleet',
    {
      config: { auth: { admin: true } },
      schema: {
        tags: ['admin'],
        summary: 'The fleet now (admin session): machines online and per go-live state, GPUs listed and allocated, jobs per state',
        description:
          'machines.total: every enrolled machine. machines.online: machines whose last heartbeat is within 3 heartbeat intervals ' +
          '(45 s at the default 15 s), the liveness the machine and offer views show; read from the store, which lags an agent’s ' +
          'heartbeat by at most one write-behind flush (1 s). machines.by_state: machines per go-live state, every state present ' +
          '(waiting, live, failed, off), zero included. gpus.total: GPUs of every enrolled machine. gpus.listed: GPUs of the machines ' +
          'GET /api/v1/offers lists now (unfiltered): offer listed, machine live (go-live on and once healthy), not held under the ' +
          'reliability floor, current offer version available beyond now; a live machine that is offline still counts (renters see ' +
          'it unavailable). gpus.allocated: the gpu_count of every job holding its ' +
          'machine’s devices (RESERVED, STARTING, RUNNING, STOPPING, RECONCILING), the occupancy reservations check. jobs.by_state: ' +
          'jobs per state, every job state present, zero included. jobs.active: jobs not in a final state (CLOSED, FAILED), so ' +
          'STOPPED and CLEANING jobs count as active though they hold no GPU. treasury: this replica’s last reconciliation of the ' +
          'chain with the ledger (its worker runs every ARK_RECONCILE_INTERVAL_MS): stablecoins held at a finalized block by the ' +
          'treasury, the payout wallet and every deposit address against available + held + payable + locked, the surplus or deficit, ' +
          'native coins apart as information; absent before the first run or without ARK_CHAINS.',
        response: withErrors({ 200: Fleet }, 403),
      },
    },
    async () => fleetView(await operations.fleet()),
  );
}
