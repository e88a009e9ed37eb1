import {
  GoLiveRequest,
  IdempotencyHeaders,
  IdParams,
  Machine,
  MachineGoLive,
  type MachineManifest,
  type MachineOffer,
  PAGE_LIMIT_DEFAULT,
  Page,
  PageQuery,
} from '@ark/shared';
import type { AppContext } from '../context.js';
import type { Config } from '../../config/index.js';
import { livenessAt, readinessOf } from '../../domain/machines/go-live.js';
import { totalRateMicroPerHour } from '../../domain/pricing.js';
import { DomainError } from '../../errors.js';
import { fromJson, toBool } from '../../store/db.js';
import type { MachineRow } from '../../store/machines.js';
import type { OfferVersionView } from '../../store/offers.js';
import type { MachineReliabilityTable } from '../../store/tables/reliability.js';
import { scoreText } from '../../domain/machines/reliability.js';
import { assertOwnerOrAdmin, principalOf } from '../auth.js';
import { answerInTransaction } from '../idempotency.js';
import { fetchSize } from '../pagination.js';
import { withErrors } from '../schemas.js';
import type { TypedApp } from '../typed-app.js';

/** The host's view of its machine: manifest, go-live, liveness (computed now), network facts, current offer. */
export function machineView(
  row: MachineRow,
  offer: OfferVersionView | undefined,
  now: Date,
  config: Pick<Config, 'heartbeatIntervalMs' | 'platformFeeBps'> & { reliability: Pick<Config['reliability'], 'floorE4'> },
  reliability?: MachineReliabilityTable,
): Machine {
  const lastHeartbeat = row.last_heartbeat_at ? new Date(row.last_heartbeat_at) : null;
  const liveness = livenessAt(lastHeartbeat, now, config.heartbeatIntervalMs);
  const healthy = row.healthy === null ? null : toBool(row.healthy);
  const offerView: MachineOffer | null = offer
    ? {
        offer_id: offer.offerId,
        offer_version: offer.version.toString(),
        rate_micro_per_hour: offer.rateMicroPerHour.toString(),
        total_rate_micro_per_hour: totalRateMicroPerHour(offer.rateMicroPerHour, config.platformFeeBps).toString(),
        platform_fee_bps: config.platformFeeBps,
        included_quotas: { included_disk_gib: offer.includedDiskGib, included_egress_gib: offer.includedEgressGib },
        available_from: offer.availableFrom,
        available_until: offer.availableUntil,
        maintenance_windows: offer.maintenanceWindows,
        listed: offer.listed,
        seeded: offer.seeded,
        readiness: readinessOf(row.live_state, liveness, healthy),
        measured_bandwidth_mbps: offer.measuredBandwidthMbps === null ? null : offer.measuredBandwidthMbps.toString(),
        committed_at: offer.committedAt,
      }
    : null;
  return {
    machine_id: row.id,
    hostname: row.hostname,
    manifest: fromJson<MachineManifest>(row.manifest)!,
    manifest_hash: row.manifest_hash,
    go_live: toBool(row.go_live),
    live: row.live_state,
    live_error: row.live_error,
    liveness,
    last_heartbeat_at: row.last_heartbeat_at,
    healthy,
    problems: fromJson<string[]>(row.problems) ?? [],
    network:
      row.net_measured_at === null
        ? null
        : {
            download_mbps: row.net_download_mbps,
            upload_mbps: row.net_upload_mbps,
            latency_ms: row.net_latency_ms,
            measured_at: row.net_measured_at,
            error: row.net_error,
          },
    offer: offerView,
    created_at: row.created_at,
    ...(reliability ? reliabilityView(reliability, config.reliability.floorE4) : {}),
  };
}

/** The machine's score and, while it is held under the floor, why it is not offered to new rentals. */
function reliabilityView(r: MachineReliabilityTable, floorE4: number): Pick<Machine, 'reliability' | 'reliability_hold'> {
  const score = scoreText(Number(r.score_e4));
  const floor = scoreText(floorE4);
  return {
    reliability: {
      score,
      new: toBool(r.is_new),
      window_from: r.window_from,
      counted_s: r.counted_s.toString(),
      online_s: r.online_s.toString(),
      penalized_jobs: Number(r.penalized_jobs),
      computed_at: r.computed_at,
    },
    reliability_hold:
      toBool(r.held) && r.held_since !== null
        ? {
            reason: 'below_reliability_floor',
            message: `Not offered to new rentals: reliability ${score} is under the floor ${floor}; it is offered again once the score is back at or above it. Running jobs are not affected.`,
            score,
            floor,
            since: r.held_since,
          }
        : null,
  };
}

export function registerMachineRoutes(app: TypedApp, ctx: AppContext): void {
  const { clock, config } = ctx;
  const hosting = ctx.services.hosting;
  // Rows come with a heartbeat still buffered in this process applied: the view shows the newest.
  const machines = hosting.machines;

  app.get(
    '/api/v1/hosts/machines',
    {
      config: { auth: { scope: 'host' } },
      schema: {
        summary: 'List your machines',
        description:
          "The caller's own machines, oldest first, with manifest, go-live state, liveness, last heartbeat, network facts and current offer.",
        querystring: PageQuery,
        response: withErrors({ 200: Page(Machine) }),
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const scope = `machines:${principal.accountId}`;
      const after = ctx.paginator.decode<[string, string]>(scope, request.query.cursor);
      const rows = await machines.listOfOwner(principal.accountId, after, fetchSize(request.query.limit));
      const now = clock.now();
      const visible = rows.slice(0, request.query.limit ?? PAGE_LIMIT_DEFAULT);
      const offers = new Map<string, OfferVersionView | undefined>();
      const scores = new Map<string, MachineReliabilityTable | undefined>();
      for (const row of visible) {
        offers.set(row.id, await machines.currentOffer(row.id));
        scores.set(row.id, await machines.reliability(row.id));
      }
      return ctx.paginator.page(
        scope,
        rows,
        request.query.limit,
        (row) => [row.created_at, row.id],
        (row) => machineView(row, offers.get(row.id), now, config, scores.get(row.id)),
      );
    },
  );

  app.get(
    '/api/v1/hosts/machines/:id',
    {
      config: { auth: { scope: 'host', owner: 'machine' } },
      schema: {
        summary: 'Read a machine',
        description: 'Owner or admin; anyone else gets 404.',
        params: IdParams,
        response: withErrors({ 200: Machine }, 404),
      },
    },
    async (request) => {
      const principal = principalOf(request);
      const row = await machines.find(request.params.id);
      if (!row) throw new DomainError('NOT_FOUND');
      assertOwnerOrAdmin(principal, row.owner_account_id);
      return machineView(row, await machines.currentOffer(row.id), clock.now(), config, await machines.reliability(row.id));
    },
  );

  app.post(
    '/api/v1/hosts/machines/:id/go-live',
    {
      config: { auth: { scope: 'host', owner: 'machine' }, idempotent: true },
      schema: {
        summary: "Turn a machine's go-live on or off",
        description:
          'Host owner. Off takes the machine out of the listing at once (state off). On waits for its next healthy heartbeat (state waiting), ' +
          'seeding an offer at the default rate when it has none. The agent is told with an update_go_live command.',
        params: IdParams,
        headers: IdempotencyHeaders,
        body: GoLiveRequest,
        response: withErrors({ 200: MachineGoLive }, 403, 404, 409),
      },
    },
    async (request, reply) => {
      const principal = principalOf(request);
      const toBody = (result: MachineGoLive) => result;
      const result = await hosting.setGoLive(
        principal.accountId,
        request.params.id,
        request.body.go_live,
        answerInTransaction(request, reply, 200, toBody),
      );
      return reply.code(200).send(toBody(result));
    },
  );
}
