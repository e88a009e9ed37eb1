import { IdParams, TelemetryQuery, TelemetryResponse } from '@ark/shared';
import type { AppContext } from '../context.js';
import { parseTelemetryWindow } from '../../domain/telemetry/window.js';
import { DomainError } from '../../errors.js';
import { telemetryView } from '../../views/machines.js';
import { assertOwnerOrAdmin, principalOf } from '../auth.js';
import { withErrors } from '../schemas.js';
import type { TypedApp } from '../typed-app.js';

export function registerTelemetryRoutes(app: TypedApp, ctx: AppContext): void {
  const hosting = ctx.services.hosting;

  app.get(
    '/api/v1/hosts/machines/:id/telemetry',
    {
      config: { auth: { scope: 'host', owner: 'machine' } },
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
      const principal = principalOf(request);
      const machine = await hosting.machines.find(request.params.id);
      if (!machine) throw new DomainError('NOT_FOUND');
      assertOwnerOrAdmin(principal, machine.ownerAccountId);
      const windowS = parseTelemetryWindow(request.query.window);
      return telemetryView(machine.id, windowS, await hosting.telemetry(machine.id, windowS));
    },
  );
}
