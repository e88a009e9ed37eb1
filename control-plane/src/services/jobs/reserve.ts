import { randomUUID } from 'node:crypto';
import type { JobCreateRequest, MachineManifest } from '@ark/shared';
import { buildLaunchBody, newEngineApiKey, validateRenterEnv, validateSshPublicKeys } from '../../domain/jobs/launch.js';
import { assertWithinSpendCap } from '../../domain/jobs/spend-cap.js';
import { ledgerAccounts } from '../../domain/ledger/accounts.js';
import { totalRateOf } from '../../domain/metering/charges.js';
import { assertQuoteUsable, assignGpus, hostCeilingOf } from '../../domain/quotes/quote.js';
import { DomainError } from '../../errors.js';
import { fromJson } from '../../store/db.js';
import { appendJobEvents } from '../../store/job-events.js';
import { insertJob, occupancyOf } from '../../store/jobs.js';
import { transfer } from '../../store/ledger.js';
import { lockMachineForReservation } from '../../store/machines.js';
import { currentOfferOf } from '../../store/offers.js';
import { isReliabilityHeld } from '../../store/reliability.js';
import { isHardwareUnlisted } from '../../store/hardware-receipts.js';
import { lockMachineChannel } from '../../store/outbox.js';
import { consumeQuote, lockQuote } from '../../store/quotes.js';
import { findTemplate } from '../../store/templates.js';
import { type CommitHook, transact } from '../../store/transaction.js';
import { assertMachineAvailable } from './availability.js';
import type { JobDeps } from './deps.js';
import { emitJobStateChanged } from './held-job.js';
import { lockedSpendCapStanding } from './spend-cap.js';

export interface Reservation {
  jobId: string;
}

const earlier = (a: Date, b: Date): Date => (a.getTime() <= b.getTime() ? a : b);

/**
 * POST /api/v1/jobs, in one transaction: consumes the quote, snapshots the rate and the host-availability ceiling,
 * assigns GPUs, holds the budget (INSUFFICIENT_BALANCE rolls everything back), creates the job at fence 1 and queues
 * launch_job for the machine. Passes the paid-admission guard first (ADMISSIONS_PAUSED while paused), then the
 * account's spend-rate cap (SPEND_RATE_CAP_EXCEEDED, nothing held or consumed).
 */
export async function reserve(
  deps: JobDeps,
  accountId: string,
  body: JobCreateRequest,
  commit?: CommitHook<Reservation>,
  admission: { acceptanceAuthorization?: string | null } = {},
): Promise<Reservation> {
  const sshPublicKeys = validateSshPublicKeys(body.ssh_public_keys);
  const renterEnv = validateRenterEnv(body.env);
  const { store, secrets, settings } = deps;
  const now = deps.clock.now();
  return transact(
    store,
    async (trx) => {
      const quote = await lockQuote(trx, body.quote_id);
      if (!quote || quote.accountId !== accountId) throw new DomainError('QUOTE_NOT_FOUND');
      assertQuoteUsable(quote, now);
      // While admission is paused only a presented acceptance authorization lets it through, spent with it.
      await deps.admissions.admit(trx, {
        accountId,
        kind: 'reservation',
        authorization: admission.acceptanceAuthorization,
        reference: `quote:${quote.id}`,
      });
      // The spend-rate cap: the account's row held, so two reservations of one account never both fit under it.
      const standing = await lockedSpendCapStanding(deps, trx, accountId);
      assertWithinSpendCap(standing, totalRateOf(quote));
      // Reservations on one machine queue behind each other, so two never take the same GPU.
      const machine = await lockMachineForReservation(trx, quote.machineId);
      if (!machine) throw new DomainError('MACHINE_NOT_AVAILABLE');
      // The machine's channel row before any ledger row, as the gateway's transactions take them.
      await lockMachineChannel(trx, machine.id);
      await assertMachineAvailable(deps, trx, machine, now);
      const offer = await currentOfferOf(trx, machine.id);
      if (!offer?.listed || (await isReliabilityHeld(trx, machine.id)) || (await isHardwareUnlisted(trx, machine.id))) {
        throw new DomainError('MACHINE_NOT_AVAILABLE', 'The machine is no longer offered.');
      }
      // The quote's ceiling, and the current version's if the host changed the offer since.
      const ceiling = earlier(
        quote.hostCeilingAt,
        hostCeilingOf(
          {
            availableFrom: new Date(offer.availableFrom),
            availableUntil: new Date(offer.availableUntil),
            maintenanceWindows: offer.maintenanceWindows,
          },
          now,
        ),
      );
      if (ceiling.getTime() <= now.getTime()) throw new DomainError('MACHINE_NOT_AVAILABLE', "The host's availability has ended.");
      const manifest = fromJson<MachineManifest>(machine.manifest) as MachineManifest;
      const occupancy = await occupancyOf(trx, machine.id);
      const gpus = assignGpus(manifest.gpus, occupancy.pciAddresses, occupancy.jobs, quote.gpuCount);
      const template = quote.templateId !== null ? await findTemplate(trx, quote.templateId) : null;
      if (quote.templateId !== null && !template) throw new DomainError('TEMPLATE_NOT_FOUND', 'The quoted template no longer exists.');

      const jobId = randomUUID();
      const engineApiKey = template?.kind === 'model' ? newEngineApiKey() : null;
      const launch = buildLaunchBody({
        jobId,
        fence: 1n,
        imageDigest: quote.imageDigest,
        gpuPciAddresses: gpus,
        sshPublicKeys,
        renterEnv,
        template: template ? { kind: template.kind, spec: template.spec } : null,
        engineApiKey,
        meterIntervalS: settings.meterIntervalS,
        jobLimits: manifest.job_limits ?? null,
        includedDiskGib: quote.includedDiskGib,
        includedEgressGib: quote.includedEgressGib,
      });
      const { fence: _fence, ...launchWithoutFence } = launch;

      await transfer(trx, {
        from: ledgerAccounts.available(accountId),
        to: ledgerAccounts.hold(jobId, accountId),
        amountMicro: quote.budgetMicro,
        kind: 'reservation',
        reference: jobId,
        at: now,
      });
      if (!(await consumeQuote(trx, quote.id, jobId, now))) throw new DomainError('QUOTE_ALREADY_USED');
      const gpuModel = gpus.length > 0 ? (manifest.gpus.find((g) => g.pci_address === gpus[0])?.model ?? machine.gpu_model) : null;
      await insertJob(trx, {
        id: jobId,
        accountId,
        machineId: machine.id,
        hostAccountId: machine.owner_account_id,
        quoteId: quote.id,
        machineRateMicroPerHour: quote.machineRateMicroPerHour,
        platformFeeBps: quote.platformFeeBps,
        fundedBudgetMicro: quote.budgetMicro,
        durationLimitS: quote.durationLimitS,
        hostCeilingAt: ceiling,
        gpuCount: quote.gpuCount,
        gpuModel,
        gpuPciAddresses: gpus,
        imageDigest: quote.imageDigest,
        template: template ? { id: template.id, name: template.name, kind: template.kind } : null,
        launchSealed: secrets.sealLaunch(jobId, launchWithoutFence),
        envSealed: secrets.sealEnv(jobId, renterEnv),
        engineKeySealed: engineApiKey === null ? null : secrets.sealEngineKey(jobId, engineApiKey),
        now,
      });
      await deps.outbox.enqueue(trx, { machineId: machine.id, kind: 'launch_job', body: launch, now });
      await appendJobEvents(
        trx,
        { id: jobId, eventSeq: 0n },
        [
          {
            kind: 'reserved',
            message: 'Reserved: the budget is held and the launch is queued for the machine.',
            data: {
              quote_id: quote.id,
              budget_micro: quote.budgetMicro.toString(),
              gpu_count: quote.gpuCount,
              image_digest: quote.imageDigest,
            },
          },
        ],
        now,
      );
      await emitJobStateChanged(
        trx,
        { id: jobId, state: 'RESERVED', machineId: machine.id, accountId, hostAccountId: machine.owner_account_id },
        null,
        now,
      );
      return { jobId };
    },
    commit,
  );
}
