import {
  ACCEPTANCE_AUTHORIZATION_HEADER,
  AdmittedIdempotencyHeaders,
  IdParams,
  OfferCommitRequest,
  OfferCommitted,
  OfferListItem,
  OfferListQuery,
  type OfferSummary,
  Page,
} from '@ark/shared';
import { livenessAt, readinessOf } from '../../domain/machines/go-live.js';
import { parseScore, scoreText } from '../../domain/machines/reliability.js';
import { maxMachineRateForTotal, totalRateMicroPerHour } from '../../domain/pricing.js';
import type { CommittedOffer } from '../../services/hosting/offers.js';
import type { ListedOffer } from '../../store/offers.js';
import { principalOf } from '../auth.js';
import type { AppContext } from '../context.js';
import { answerInTransaction } from '../idempotency.js';
import { fetchSize } from '../pagination.js';
import { withErrors } from '../schemas.js';
import type { TypedApp } from '../typed-app.js';

/** Query figures may have 38 digits; the store compares int64 columns, and no stored value exceeds this. */
const INT64_MAX = 9_223_372_036_854_775_807n;
const clampInt64 = (value: bigint): bigint => (value > INT64_MAX ? INT64_MAX : value);

/**
 * Contract part 2, OfferSummary: only what a renter may see (never a host address). `expected_version` is the
 * version to name when acting on exactly this offer version, i.e. the offer_version itself.
 */
export function offerSummary(offer: ListedOffer, now: Date, config: { heartbeatIntervalMs: number; platformFeeBps: number }): OfferSummary {
  const m = offer.machine;
  const liveness = livenessAt(m.lastHeartbeatAt ? new Date(m.lastHeartbeatAt) : null, now, config.heartbeatIntervalMs);
  const version = offer.version.toString();
  return {
    offer_id: offer.offerId,
    machine_id: offer.machineId,
    observed_at: now.toISOString(),
    offer_version: version,
    expected_version: version,
    readiness: readinessOf(m.liveState, liveness, m.healthy),
    total_rate_micro_per_hour: totalRateMicroPerHour(offer.rateMicroPerHour, config.platformFeeBps).toString(),
    included_quotas: { included_disk_gib: offer.includedDiskGib, included_egress_gib: offer.includedEgressGib },
    available_from: offer.availableFrom,
    available_until: offer.availableUntil,
    maintenance_windows: offer.maintenanceWindows,
    ...(m.gpuCount >= 1 ? { gpu_count: m.gpuCount } : {}),
    ...(m.gpuModel !== null ? { model: m.gpuModel } : {}),
    ...(m.vramBytes !== null ? { vram_bytes: m.vramBytes.toString() } : {}),
    ram_bytes: m.ramBytes.toString(),
    disk_bytes: m.diskBytes.toString(),
    ...(offer.measuredBandwidthMbps !== null ? { measured_bandwidth_mbps: offer.measuredBandwidthMbps.toString() } : {}),
    ...(m.region !== null ? { region: m.region } : {}),
    manifest_hash: m.manifestHash,
    ...(m.jobLimits !== null ? { job_limits: m.jobLimits } : {}),
  };
}

/** The machine's reliability for a listing that asked for it (include=reliability); nothing before it is scored. */
function reliabilityOf(offer: ListedOffer): Pick<OfferListItem, 'reliability'> {
  return offer.reliability ? { reliability: { score: scoreText(offer.reliability.scoreE4), new: offer.reliability.isNew } } : {};
}

export function registerOfferRoutes(app: TypedApp, ctx: AppContext): void {
  const { config } = ctx;
  const offers = ctx.services.offers;
  const committedView = (committed: CommittedOffer) => ({
    machine_id: committed.machineId,
    offer_id: committed.offerId,
    offer_version: committed.version.toString(),
  });

  app.post(
    '/api/v1/hosts/machines/:id/offer',
    {
      config: { auth: { scope: 'host', owner: 'machine' }, idempotent: true },
      schema: {
        summary: 'Commit a new offer version',
        description:
          'Host owner. Publishes a versioned future offer: each commit is a new immutable version, moved by compare-and-set on expected_version ' +
          '("0" for the first; OFFER_VERSION_MISMATCH 409 otherwise). Never alters a running price: jobs keep the rate snapshotted from their quote. ' +
          'While admission is paused: 503 ADMISSIONS_PAUSED, unless the Ark-Acceptance-Authorization header names a valid authorization (spent once).',
        params: IdParams,
        headers: AdmittedIdempotencyHeaders,
        body: OfferCommitRequest,
        response: withErrors({ 202: OfferCommitted }, 403, 404, 409, 503),
      },
    },
    async (request, reply) => {
      const committed = await offers.commit(
        {
          principal: principalOf(request),
          machineId: request.params.id,
          request: request.body,
          acceptanceAuthorization: request.headers[ACCEPTANCE_AUTHORIZATION_HEADER],
        },
        answerInTransaction(request, reply, 202, committedView),
      );
      return reply.code(202).send(committedView(committed));
    },
  );

  app.get(
    '/api/v1/offers',
    {
      config: { auth: { scope: 'renter' } },
      schema: {
        summary: 'List offers',
        description:
          'Renter scope. Listed offers of live machines whose availability has not ended, cheapest first. Filters: gpu_model (exact), min_vram_bytes ' +
          '(every GPU), region, max_rate_micro_per_hour (on the total rate, fee included), available_at (inside availability, outside maintenance), ' +
          'min_reliability (0 to 1 with at most 4 decimals: machines scored at least this and no longer new; 422 VALIDATION_FAILED otherwise). ' +
          'A machine held under the reliability floor is not listed. Each item is exactly an OfferSummary; with include=reliability it also ' +
          'carries its machine’s reliability once scored.',
        querystring: OfferListQuery,
        response: withErrors({ 200: Page(OfferListItem) }, 404),
      },
    },
    async (request) => {
      const q = request.query;
      const scope = 'offers';
      const after = ctx.paginator.decode<[string, string]>(scope, q.cursor);
      const { now, offers: rows } = await offers.browse({
        filter: {
          ...(q.gpu_model !== undefined ? { gpuModel: q.gpu_model } : {}),
          ...(q.min_vram_bytes !== undefined ? { minVramBytes: clampInt64(BigInt(q.min_vram_bytes)) } : {}),
          ...(q.region !== undefined ? { region: q.region } : {}),
          ...(q.max_rate_micro_per_hour !== undefined
            ? { maxMachineRateMicroPerHour: clampInt64(maxMachineRateForTotal(BigInt(q.max_rate_micro_per_hour), config.platformFeeBps)) }
            : {}),
          ...(q.available_at !== undefined ? { availableAt: new Date(q.available_at) } : {}),
          // The schema's pattern admits only 0..1 with up to 4 decimals: parseScore never answers null here.
          ...(q.min_reliability !== undefined ? { minReliabilityE4: parseScore(q.min_reliability) ?? 0 } : {}),
        },
        templateId: q.template_id !== undefined ? q.template_id.toLowerCase() : null,
        after,
        fetch: fetchSize(q.limit),
      });
      return ctx.paginator.page(
        scope,
        rows,
        q.limit,
        (row) => [row.rateMicroPerHour.toString(), row.offerId],
        (row): OfferListItem => ({
          ...offerSummary(row, now, config),
          ...(row.fit ? { fit: row.fit } : {}),
          ...(q.include === 'reliability' ? reliabilityOf(row) : {}),
        }),
      );
    },
  );
}
