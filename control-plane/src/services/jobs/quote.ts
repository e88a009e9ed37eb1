import { randomUUID } from 'node:crypto';
import { type MachineManifest, MICRO_AMOUNT_MAX, type QuoteRequest } from '@ark/shared';
import { deviceVramOf } from '../../domain/machines/manifest.js';
import { assertWithinSpendCap } from '../../domain/jobs/spend-cap.js';
import { estimatedTotalMicro, totalRateOf } from '../../domain/metering/charges.js';
import {
  assertOneImageSource,
  assertWindowAvailable,
  assignGpus,
  hostCeilingOf,
  MACHINE_BACKEND,
  QUOTE_LIFETIME_MS,
  type QuoteRecord,
} from '../../domain/quotes/quote.js';
import { computeFit } from '../../domain/templates/fit.js';
import { DomainError } from '../../errors.js';
import { fromJson } from '../../store/db.js';
import { occupancyOf } from '../../store/jobs.js';
import { findMachine, machineIdOfOffer } from '../../store/machines.js';
import { currentOfferOf } from '../../store/offers.js';
import { isReliabilityHeld } from '../../store/reliability.js';
import { isHardwareUnlisted } from '../../store/hardware-receipts.js';
import { insertQuote } from '../../store/quotes.js';
import { findTemplate } from '../../store/templates.js';
import { type CommitHook, transact } from '../../store/transaction.js';
import { assertMachineAvailable } from './availability.js';
import type { JobDeps } from './deps.js';
import { spendCapStanding } from './spend-cap.js';

/**
 * POST /api/v1/quotes: checks the offer, machine, window, GPUs and image, and stores a quote valid 60 seconds at the
 * offer's current rate. A quote whose rate would not fit under the account's spend-rate cap now is refused
 * (SPEND_RATE_CAP_EXCEEDED); the reservation checks again, and that check is the one that holds.
 */
export async function createQuote(
  deps: JobDeps,
  accountId: string,
  body: QuoteRequest,
  commit?: CommitHook<QuoteRecord>,
): Promise<QuoteRecord> {
  assertOneImageSource(body);
  const now = deps.clock.now();
  return transact(
    deps.store,
    async (trx) => {
      const machineId = await machineIdOfOffer(trx, body.offer_id);
      if (machineId === null) throw new DomainError('OFFER_NOT_FOUND');
      const offer = await currentOfferOf(trx, machineId);
      if (!offer) throw new DomainError('OFFER_NOT_FOUND');
      // A machine held under the reliability floor, or by a contradicting hardware receipt, answers as an unlisted one.
      if (!offer.listed || (await isReliabilityHeld(trx, machineId)) || (await isHardwareUnlisted(trx, machineId)))
        throw new DomainError('OFFER_NOT_CURRENT', 'The offer is not listed.');
      if (body.expected_version !== undefined && BigInt(body.expected_version) !== offer.version) {
        throw new DomainError(
          'OFFER_NOT_CURRENT',
          `The offer is at version ${offer.version}, not ${body.expected_version}; read it again.`,
        );
      }
      const machine = await findMachine(trx, offer.machineId);
      if (!machine) throw new DomainError('OFFER_NOT_FOUND');
      await assertMachineAvailable(deps, trx, machine, now);
      const terms = {
        availableFrom: new Date(offer.availableFrom),
        availableUntil: new Date(offer.availableUntil),
        maintenanceWindows: offer.maintenanceWindows,
      };
      assertWindowAvailable(terms, now, new Date(now.getTime() + body.duration_limit_s * 1000));
      const manifest = fromJson<MachineManifest>(machine.manifest) as MachineManifest;
      const occupancy = await occupancyOf(trx, machine.id);
      const gpus = assignGpus(manifest.gpus, occupancy.pciAddresses, occupancy.jobs, body.gpu_count);

      let imageDigest: string;
      let templateId: string | null = null;
      if (body.template_id !== undefined) {
        const template = await findTemplate(trx, body.template_id);
        if (!template) throw new DomainError('TEMPLATE_NOT_FOUND', 'No template has this id.');
        const runtime = template.runtimes.find((r) => r.backend === MACHINE_BACKEND);
        if (!runtime) throw new DomainError('TEMPLATE_RUNTIME_MISSING');
        const fit = computeFit(template, deviceVramOf(manifest, gpus));
        if (!fit.fits) {
          throw new DomainError(
            'TEMPLATE_DOES_NOT_FIT',
            `The template needs ${fit.min_vram_bytes} bytes of VRAM per GPU; this machine's have ${fit.device_vram_bytes ?? 0}.`,
          );
        }
        imageDigest = runtime.image_digest;
        templateId = template.id;
      } else {
        imageDigest = body.image_digest as string;
      }

      const durationS = BigInt(body.duration_limit_s);
      const rate = { machineRateMicroPerHour: offer.rateMicroPerHour, platformFeeBps: BigInt(deps.settings.platformFeeBps) };
      // The reservation enforces the spend-rate cap under a lock; this early look spares a quote that cannot be used.
      assertWithinSpendCap(await spendCapStanding(deps, trx, accountId), totalRateOf(rate));
      const estimate = estimatedTotalMicro(rate, durationS);
      let budget: bigint;
      if (body.budget_micro !== undefined) {
        budget = BigInt(body.budget_micro);
        if (budget < 1n) throw new DomainError('VALIDATION_FAILED', 'body/budget_micro must be at least 1');
      } else {
        // A hold of nothing is no hold: the smallest budget is one micro; the largest is one MicroAmount.
        budget = estimate > MICRO_AMOUNT_MAX ? MICRO_AMOUNT_MAX : estimate > 0n ? estimate : 1n;
      }
      const quote: QuoteRecord = {
        id: randomUUID(),
        accountId,
        machineId: machine.id,
        offerId: offer.offerId,
        offerVersion: offer.version,
        gpuCount: body.gpu_count,
        machineRateMicroPerHour: rate.machineRateMicroPerHour,
        platformFeeBps: rate.platformFeeBps,
        budgetMicro: budget,
        durationLimitS: durationS,
        estimatedTotalMicro: estimate,
        manifestHash: machine.manifest_hash,
        imageDigest,
        templateId,
        termsVersion: deps.settings.termsVersion,
        includedDiskGib: offer.includedDiskGib,
        includedEgressGib: offer.includedEgressGib,
        hostCeilingAt: hostCeilingOf(terms, now),
        createdAt: now,
        expiresAt: new Date(now.getTime() + QUOTE_LIFETIME_MS),
        usedAt: null,
        jobId: null,
      };
      await insertQuote(trx, quote);
      return quote;
    },
    commit,
  );
}
