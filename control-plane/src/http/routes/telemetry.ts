import { IdParams, TELEMETRY_BUCKET_S, TELEMETRY_RETENTION_S, TelemetryQuery, TelemetryResponse } from '@ark/shared';
import { PostgresAdapter } from 'kysely';
import type { AppContext } from '../../app.js';
import { rollUp } from '../../domain/telemetry/rollup.js';
import { parseTelemetryWindow } from '../../domain/telemetry/window.js';
import { DomainError } from '../../errors.js';
import type { ChannelHandlers } from '../../gateway/handlers.js';
import type { Executor } from '../../store/db.js';
import { findMachine } from '../../store/machines.js';
import { mergeTelemetry, readTelemetry } from '../../store/telemetry.js';
import { assertOwnerOrAdmin } from '../auth.js';
import type { Principal } from '../principal.js';
import { withErrors } from '../schemas.js';
import type { TypedApp } from '../typed-app.js';

const dialectOf = (db: Executor) => (db.getExecutor().adapter instanceof PostgresAdapter ? 'postgres' : 'sqlite');

/** Agent telemetry batches merge into the 300-second buckets, in the gateway's apply-once transaction. */
export function registerTelemetryChannelHandlers(channel: ChannelHandlers): void {
  channel.on('telemetry', async (trx, machineId, msg, now) => {
    await mergeTelemetry(trx, dialectOf(trx), machineId, rollUp(msg.samples, now));
  });
}

export function registerTelemetryRoutes(app: TypedApp, ctx: AppContext): void {
  const { store, clock } = ctx;
  registerTelemetryChannelHandlers(ctx.channel);

  app.get(
    '/api/v1/hosts/machines/:id/telemetry',
    {
      config: { auth: { scope: 'host' } },
      schema: {
        summary: 'Machine telemetry',
        description:
          'Host owner or admin; anyone else gets 404, never 403. Query window `<n>s`, `<n>m` or `<n>h` (default 6h); a window longer than the ' +
          'retention (172800 s) is refused, not clamped. Buckets of 300 s, oldest first, each field min/avg/max; a field never measured is absent.',
        params: IdParams,
        querystring: TelemetryQuery,
        response: withErrors({ 200: TelemetryResponse }, 404),
      },
    },
    async (request): Promise<TelemetryResponse> => {
      const principal: Principal | null = request.principal;
      if (!principal) throw new DomainError('UNAUTHENTICATED');
      const machine = await findMachine(store.db, request.params.id);
      if (!machine) throw new DomainError('NOT_FOUND');
      assertOwnerOrAdmin(principal, machine.owner_account_id);
      const windowS = parseTelemetryWindow(request.query.window);
      const now = clock.now();
      return {
        machine_id: machine.id,
        window_s: windowS,
        bucket_s: TELEMETRY_BUCKET_S,
        retention_s: TELEMETRY_RETENTION_S,
        buckets: await readTelemetry(store.db, machine.id, windowS, now),
      };
    },
  );
}
