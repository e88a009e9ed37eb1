import {
  ACCEPTANCE_AUTHORIZATION_HEADER,
  AdmittedIdempotencyHeaders,
  IdParams,
  OfferCommitRequest,
  OfferCommitted,
  OfferListItem,
  OfferListQuery,
  Page,
} from '@ark/shared';
import { parseScore } from '../../domain/machines/reliability.js';
import { maxMachineRateForTotal } from '../../domain/pricing.js';
import { offerCommittedView, offerListItemView } from '../../views/offers.js';
import { principalOf } from '../auth.js';
import type { AppContext } from '../context.js';
import { answerInTransaction } from '../idempotency.js';
import { fetchSize } from '../pagination.js';
import { withErrors } from '../schemas.js';
import type { TypedApp } from '../typed-app.js';

/** Query figures may have 38 digits; the store compares int64 columns, and no stored value exceeds this. */
const INT64_MAX = 9_223_372_036_854_775_807n;
const clampInt64 = (value: bigint): bigint => (value > INT64_MAX ? INT64_MAX : value);

export function registerOfferRoutes(app: TypedApp, ctx: AppContext): void {
  const { config } = ctx;
  const offers = ctx.services.offers;

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
        answerInTransaction(request, reply, 202, offerCommittedView),
      );
      return reply.code(202).send(offerCommittedView(committed));
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
          '(every GPU), min_gpu_count, region, max_rate_micro_per_hour (on the total rate, fee included), available_at (inside availability, outside maintenance), ' +
          'min_reliability (0 to 1 with at most 4 decimals: machines scored at least this and no longer new; 422 VALIDATION_FAILED otherwise), ' +
          'min_score (a decimal with at most 3 decimals: machines whose verified hardware score is at least this; 422 VALIDATION_FAILED ' +
          'otherwise). A machine held under the reliability floor, or unlisted by a hardware receipt that contradicts its declared hardware, ' +
          'is not listed. A machine rented out right now (every GPU held by a job, or a machine without GPUs occupied) is listed with ' +
          'readiness unavailable: quoting it is refused until a job frees it. Each item is exactly an OfferSummary; include=reliability adds its machine’s reliability once scored, ' +
          'include=verification its hardware score and verified_at (GET /api/v1/machines/{id}/verification shows the signed receipts), ' +
          'include=reliability,verification both.',
        querystring: OfferListQuery,
        response: withErrors({ 200: Page(OfferListItem) }, 404),
      },
    },
    async (request) => {
      const q = request.query;
      const scope = 'offers';
      const after = ctx.paginator.decode<[string, string]>(scope, q.cursor);
      const includes = new Set(q.include?.split(',') ?? []);
      const included = { reliability: includes.has('reliability'), verification: includes.has('verification') };
      const { now, offers: listed } = await offers.browse({
        filter: {
          ...(q.gpu_model !== undefined ? { gpuModel: q.gpu_model } : {}),
          ...(q.min_vram_bytes !== undefined ? { minVramBytes: clampInt64(BigInt(q.min_vram_bytes)) } : {}),
          ...(q.min_gpu_count !== undefined ? { minGpuCount: q.min_gpu_count } : {}),
          ...(q.region !== undefined ? { region: q.region } : {}),
          ...(q.max_rate_micro_per_hour !== undefined
            ? { maxMachineRateMicroPerHour: clampInt64(maxMachineRateForTotal(BigInt(q.max_rate_micro_per_hour), config.platformFeeBps)) }
            : {}),
          ...(q.available_at !== undefined ? { availableAt: new Date(q.available_at) } : {}),
          // The schema's pattern admits only 0..1 with up to 4 decimals: parseScore never answers null here.
          ...(q.min_reliability !== undefined ? { minReliabilityE4: parseScore(q.min_reliability) ?? 0 } : {}),
          // The schema's pattern admits only a plain decimal: Number() reads it exactly enough for a floor.
          ...(q.min_score !== undefined ? { minHardwareScore: Number(q.min_score) } : {}),
        },
        templateId: q.template_id !== undefined ? q.template_id.toLowerCase() : null,
        after,
        fetch: fetchSize(q.limit),
      });
      return ctx.paginator.page(
        scope,
        listed,
        q.limit,
        (offer) => [offer.rateMicroPerHour.toString(), offer.offerId],
        (offer) => offerListItemView(offer, now, config, included),
      );
    },
  );
}
