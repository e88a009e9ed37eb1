import { randomUUID } from 'node:crypto';
import type {
  BudgetExtensionRequest,
  HeartbeatMessage,
  JobCreateRequest,
  JobStatusMessage,
  LaunchJobBody,
  MachineManifest,
  MeterReceiptMessage,
  QuoteRequest,
  StopJobBody,
} from '@ark/shared';
import { PostgresAdapter } from 'kysely';
import type { Config } from '../config.js';
import { SecretBox } from '../domain/accounts/secret-box.js';
import { ledgerAccounts } from '../domain/ledger/accounts.js';
import { livenessAt, readinessOf } from '../domain/machines/go-live.js';
import { buildLaunchBody, newEngineApiKey, validateRenterEnv, validateSshPublicKeys } from '../domain/jobs/launch.js';
import { fundingOf, type JobAccessReport, type JobRecord } from '../domain/jobs/job.js';
import {
  assertTransition,
  type CloseReason,
  EXTENDABLE_STATES,
  type StopAnswerState,
  STOPPABLE_STATES,
  stopAnswerOf,
} from '../domain/jobs/states.js';
import { chargeDelta, chargesFor, estimatedTotalMicro, fundedThrough, type FundingBound } from '../domain/metering/charges.js';
import { describeReceiptVerdict, evaluateReceipt, type MeterState } from '../domain/metering/receipts.js';
import {
  assertOneImageSource,
  assertQuoteUsable,
  assertWindowAvailable,
  assignGpus,
  hostCeilingOf,
  MACHINE_BACKEND,
  QUOTE_LIFETIME_MS,
  type QuoteRecord,
} from '../domain/quotes/quote.js';
import { computeFit } from '../domain/templates/fit.js';
import { DomainError } from '../errors.js';
import { enqueueCommand } from '../gateway/outbox.js';
import { type Executor, fromJson, type Store, toJson, type Tx } from './db.js';
import { isHostingBlocked } from './hosts.js';
import { postMeteredCharge } from './job-charges.js';
import { appendJobEvents, type NewJobEvent } from './job-events.js';
import {
  accessToJson,
  insertAmendment,
  insertJob,
  type JobRow,
  jobIdsInStates,
  jobIdsOfMachine,
  jobIdsOnSilentMachines,
  lockJob,
  occupancyOf,
  toJobRecord,
  updateJob,
} from './jobs.js';
import { balanceOf, inTransactionWithRetry, transfer } from './ledger.js';
import { lastHeartbeatAtOf } from './heartbeats.js';
import { findMachine, type MachineRow } from './machines.js';
import { currentOfferOf } from './offers.js';
import { consumeQuote, insertQuote, lockQuote, purgeExpiredQuotes } from './quotes.js';
import { findTemplate, recordAgentQualification } from './templates.js';

// The job aggregate's transactions: quotes, reservation, lifecycle from agent status, metering into the ledger,
// budget extension, stop, reconciliation and the sweeps. Every job change holds the job row first (FOR UPDATE on
// Postgres), then moves ledger accounts in key order, then queues agent commands: one lock order everywhere.

/** What the job aggregate reads from the configuration. */
export interface JobSettings {
  platformFeeBps: number;
  termsVersion: string;
  heartbeatIntervalMs: number;
  meterIntervalS: number;
  meterSkewMs: number;
  retrievalWindowS: number;
  agentGraceMs: number;
  reconcileTimeoutMs: number;
  startTimeoutMs: number;
  /** Where renters reach a machine whose agent reported no public address. */
  accessHost: string;
  secretKey: Buffer;
}

export function jobSettingsOf(config: Config): JobSettings {
  return {
    platformFeeBps: config.platformFeeBps,
    termsVersion: config.termsVersion,
    heartbeatIntervalMs: config.heartbeatIntervalMs,
    meterIntervalS: config.meterIntervalS,
    meterSkewMs: config.meterSkewMs,
    retrievalWindowS: config.retrievalWindowS,
    agentGraceMs: config.jobAgentGraceMs,
    reconcileTimeoutMs: config.jobReconcileTimeoutMs,
    startTimeoutMs: config.jobStartTimeoutMs,
    accessHost: config.jobAccessHost ?? hostOfUrl(config.publicBaseUrl),
    secretKey: config.secretKey,
  };
}

function hostOfUrl(url: string): string {
  try {
    return new URL(url).hostname.replace(/^\[|\]$/g, '') || '127.0.0.1';
  } catch {
    return '127.0.0.1';
  }
}

/** Most jobs one sweep step moves; the next step takes the rest. */
export const SWEEP_BATCH = 100;

const isPostgres = (db: Executor): boolean => db.getExecutor().adapter instanceof PostgresAdapter;
const iso = (d: Date): string => d.toISOString();
const maxDate = (a: Date, b: Date): Date => (a.getTime() >= b.getTime() ? a : b);
const minDate = (a: Date, b: Date): Date => (a.getTime() <= b.getTime() ? a : b);

const engineKeyContext = (jobId: string) => `job-engine-key:${jobId}`;
const envContext = (jobId: string) => `job-env:${jobId}`;
const launchContext = (jobId: string) => `job-launch:${jobId}`;

/** An instant the agent reported, never later than now nor earlier than `floor`. */
function agentInstant(reported: string, now: Date, floor: Date): Date {
  const at = new Date(reported);
  if (Number.isNaN(at.getTime())) return now;
  return maxDate(minDate(at, now), floor);
}

const STOP_MESSAGES: Record<CloseReason, string> = {
  stopped_by_renter: 'Stop requested by the renter.',
  stopped_by_admin: 'Stop requested by an administrator.',
  budget_exhausted: 'Stopping: the funded budget is spent.',
  duration_limit: 'Stopping: the duration limit has passed.',
  host_ceiling: "Stopping: the host's availability ends.",
  container_exited: 'The container exited on its own; stopping the job.',
  start_timeout: 'Cancelled: the job did not become ready in time.',
  launch_failed: 'The launch failed.',
  job_failed: 'The job failed on the machine.',
  agent_lost: 'The machine stayed silent past the reconcile timeout; the job failed.',
  machine_lost: 'The machine stayed silent; the job was closed without its confirmation.',
};

const BOUND_REASON: Record<FundingBound, CloseReason> = {
  budget: 'budget_exhausted',
  duration_limit: 'duration_limit',
  host_ceiling: 'host_ceiling',
};

/** A held job row inside one transaction: the record, and what to write back. */
class HeldJob {
  readonly trx: Tx;
  job: JobRecord;
  readonly #lifecycle: JobLifecycle;
  #secrets: string[] | null = null;

  constructor(trx: Tx, row: JobRow, lifecycle: JobLifecycle) {
    this.trx = trx;
    this.job = toJobRecord(row);
    this.#lifecycle = lifecycle;
  }

  /** The renter's variables and the engine key: redacted from anything an agent reports. */
  secrets(): string[] {
    if (this.#secrets === null) this.#secrets = this.#lifecycle.secretsOf(this.job.id, this.#envSealed, this.#engineKeySealed);
    return this.#secrets;
  }
  #envSealed = '';
  #engineKeySealed: string | null = null;
  withSealed(row: JobRow): this {
    this.#envSealed = row.env_sealed;
    this.#engineKeySealed = row.engine_key_sealed;
    return this;
  }

  /** Appends events; the job's secrets are redacted from all of them (agent text can reach any of them). */
  async events(events: NewJobEvent[], now: Date): Promise<void> {
    await appendJobEvents(this.trx, this.job, events, now, this.secrets());
  }
}

export class JobLifecycle {
  readonly store: Store;
  readonly settings: JobSettings;
  readonly #box: SecretBox;

  constructor(store: Store, settings: JobSettings) {
    this.store = store;
    this.settings = settings;
    this.#box = new SecretBox(settings.secretKey);
  }

  // ---------------------------------------------------------------- quotes

  /** POST /api/v1/quotes: checks the offer, machine, window, GPUs and image, and stores a 60-second quote. */
  async createQuote(accountId: string, body: QuoteRequest, now: Date): Promise<QuoteRecord> {
    assertOneImageSource(body);
    const db = this.store.db;
    const offerRow = await db.selectFrom('offers').select(['id', 'machine_id']).where('id', '=', body.offer_id).executeTakeFirst();
    if (!offerRow) throw new DomainError('OFFER_NOT_FOUND');
    const offer = await currentOfferOf(db, offerRow.machine_id);
    if (!offer) throw new DomainError('OFFER_NOT_FOUND');
    if (!offer.listed) throw new DomainError('OFFER_NOT_CURRENT', 'The offer is not listed.');
    if (body.expected_version !== undefined && BigInt(body.expected_version) !== offer.version) {
      throw new DomainError('OFFER_NOT_CURRENT', `The offer is at version ${offer.version}, not ${body.expected_version}; read it again.`);
    }
    const machine = await findMachine(db, offer.machineId);
    if (!machine) throw new DomainError('OFFER_NOT_FOUND');
    await this.#assertMachineAvailable(db, machine, now);
    const durationS = BigInt(body.duration_limit_s);
    const terms = {
      availableFrom: new Date(offer.availableFrom),
      availableUntil: new Date(offer.availableUntil),
      maintenanceWindows: offer.maintenanceWindows,
    };
    assertWindowAvailable(terms, now, new Date(now.getTime() + body.duration_limit_s * 1000));
    const manifest = fromJson<MachineManifest>(machine.manifest) as MachineManifest;
    const occupancy = await occupancyOf(db, machine.id);
    const gpus = assignGpus(manifest.gpus, occupancy.pciAddresses, occupancy.jobs, body.gpu_count);

    let imageDigest: string;
    let templateId: string | null = null;
    if (body.template_id !== undefined) {
      const template = await findTemplate(db, body.template_id);
      if (!template) throw new DomainError('TEMPLATE_NOT_FOUND', 'No template has this id.');
      const runtime = template.runtimes.find((r) => r.backend === MACHINE_BACKEND);
      if (!runtime) throw new DomainError('TEMPLATE_RUNTIME_MISSING');
      const fit = computeFit(template, deviceVram(manifest, gpus));
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

    const rate = { machineRateMicroPerHour: offer.rateMicroPerHour, platformFeeBps: BigInt(this.settings.platformFeeBps) };
    const estimate = estimatedTotalMicro(rate, durationS);
    let budget: bigint;
    if (body.budget_micro !== undefined) {
      budget = BigInt(body.budget_micro);
      if (budget < 1n) throw new DomainError('VALIDATION_FAILED', 'body/budget_micro must be at least 1');
    } else {
      // A hold of nothing is no hold: the smallest budget is one micro.
      budget = estimate > 0n ? estimate : 1n;
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
      termsVersion: this.settings.termsVersion,
      includedDiskGib: offer.includedDiskGib,
      includedEgressGib: offer.includedEgressGib,
      hostCeilingAt: hostCeilingOf(terms, now),
      createdAt: now,
      expiresAt: new Date(now.getTime() + QUOTE_LIFETIME_MS),
      usedAt: null,
      jobId: null,
    };
    await insertQuote(db, quote);
    return quote;
  }

  async #assertMachineAvailable(db: Executor, machine: MachineRow, now: Date): Promise<void> {
    // Heartbeats that changed nothing may still be buffered in this process (store/heartbeats.ts).
    const lastHeartbeatAt = lastHeartbeatAtOf(this.store, machine.id, machine.last_heartbeat_at);
    const liveness = livenessAt(lastHeartbeatAt ? new Date(lastHeartbeatAt) : null, now, this.settings.heartbeatIntervalMs);
    const healthy = machine.healthy === null ? null : machine.healthy === 1n;
    if (readinessOf(machine.live_state, liveness, healthy) !== 'ready') {
      throw new DomainError('MACHINE_NOT_AVAILABLE', `The machine is ${machine.live_state === 'live' ? liveness : machine.live_state}.`);
    }
    if (await isHostingBlocked(db, machine.owner_account_id))
      throw new DomainError('MACHINE_NOT_AVAILABLE', 'The machine is not offered now.');
  }

  // ---------------------------------------------------------------- reservation

  /**
   * POST /api/v1/jobs, in one transaction: consumes the quote, snapshots the rate and the host-availability
   * ceiling, assigns GPUs, holds the budget (INSUFFICIENT_BALANCE rolls everything back), creates the job at fence 1
   * and queues launch_job for the machine.
   */
  async reserve(accountId: string, body: JobCreateRequest, now: Date): Promise<{ jobId: string }> {
    const sshPublicKeys = validateSshPublicKeys(body.ssh_public_keys);
    const renterEnv = validateRenterEnv(body.env);
    return inTransactionWithRetry(this.store, async (trx) => {
      const postgres = isPostgres(trx);
      const quote = await lockQuote(trx, body.quote_id, postgres);
      if (!quote || quote.accountId !== accountId) throw new DomainError('QUOTE_NOT_FOUND');
      assertQuoteUsable(quote, now);
      let machineQuery = trx.selectFrom('machines').selectAll().where('id', '=', quote.machineId);
      // Reservations on one machine queue behind each other, so two never take the same GPU.
      // NO KEY UPDATE: it does not block the key-share locks of rows referencing the machine.
      if (postgres) machineQuery = machineQuery.forNoKeyUpdate();
      const machine = await machineQuery.executeTakeFirst();
      if (!machine) throw new DomainError('MACHINE_NOT_AVAILABLE');
      // The machine's channel row before any ledger row, as the gateway's transactions take them.
      await lockMachineChannel(trx, machine.id);
      await this.#assertMachineAvailable(trx, machine, now);
      const offer = await currentOfferOf(trx, machine.id);
      if (!offer?.listed) throw new DomainError('MACHINE_NOT_AVAILABLE', 'The machine is no longer offered.');
      // The quote's ceiling, and the current version's if the host changed the offer since.
      const ceiling = minDate(
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
        meterIntervalS: this.settings.meterIntervalS,
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
        launchSealed: this.#box.seal(toJson(launchWithoutFence), launchContext(jobId)),
        envSealed: this.#box.seal(toJson(renterEnv), envContext(jobId)),
        engineKeySealed: engineApiKey === null ? null : this.#box.seal(engineApiKey, engineKeyContext(jobId)),
        now,
      });
      await enqueueCommand(trx, { machineId: machine.id, kind: 'launch_job', body: launch, now });
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
      return { jobId };
    });
  }

  // ---------------------------------------------------------------- secrets

  /** The job's engine key, for the access endpoint of a model-kind job. */
  engineApiKeyOf(jobId: string, sealed: string | null): string | null {
    return sealed === null ? null : this.#box.open(sealed, engineKeyContext(jobId));
  }

  secretsOf(jobId: string, envSealed: string, engineKeySealed: string | null): string[] {
    const env = envSealed === '' ? {} : (JSON.parse(this.#box.open(envSealed, envContext(jobId))) as Record<string, string>);
    const key = this.engineApiKeyOf(jobId, engineKeySealed);
    return [...(key !== null ? [key] : []), ...Object.values(env)];
  }

  #launchOf(row: JobRow, fence: bigint): LaunchJobBody {
    const body = JSON.parse(this.#box.open(row.launch_sealed, launchContext(row.id))) as Omit<LaunchJobBody, 'fence'>;
    return { ...body, fence: fence.toString() };
  }

  // ---------------------------------------------------------------- holding a job

  async #hold(trx: Tx, jobId: string): Promise<{ held: HeldJob; row: JobRow } | null> {
    const row = await lockJob(trx, jobId, isPostgres(trx));
    if (!row) return null;
    return { held: new HeldJob(trx, row, this).withSealed(row), row };
  }

  /** Runs `work` on the held job in its own transaction (routes and sweeps). */
  async withJob<T>(jobId: string, work: (held: HeldJob, row: JobRow) => Promise<T>): Promise<T | null> {
    return inTransactionWithRetry(this.store, async (trx) => {
      // The gateway applies a machine's messages holding its channel row, then the job row: take them in that order
      // too, or a stop racing a receipt would deadlock.
      const target = await trx.selectFrom('jobs').select('machine_id').where('id', '=', jobId).executeTakeFirst();
      if (!target) return null;
      await lockMachineChannel(trx, target.machine_id);
      const found = await this.#hold(trx, jobId);
      return found ? work(found.held, found.row) : null;
    });
  }

  /** Moves the held job to `to`, writing `patch`, bumping job_version and recording the transition. */
  async #transition(
    held: HeldJob,
    to: JobRecord['state'],
    now: Date,
    patch: Parameters<typeof updateJob>[2] = {},
    event?: { message: string; data?: Record<string, unknown> },
  ): Promise<void> {
    const from = held.job.state;
    assertTransition(from, to);
    const jobVersion = held.job.jobVersion + 1n;
    await updateJob(held.trx, held.job.id, {
      ...patch,
      state: to,
      job_version: jobVersion,
      state_changed_at: iso(now),
      updated_at: iso(now),
    });
    held.job = { ...held.job, state: to, jobVersion, stateChangedAt: now };
    await held.events(
      [{ kind: 'state_changed', message: event?.message ?? `${from} -> ${to}.`, data: { from, to, ...(event?.data ?? {}) } }],
      now,
    );
  }

  /** Returns what is left of the job's hold to the renter's available balance. */
  async #releaseHold(held: HeldJob, now: Date): Promise<bigint> {
    const hold = ledgerAccounts.hold(held.job.id, held.job.accountId);
    const remaining = await balanceOf(held.trx, hold);
    if (remaining > 0n) {
      await transfer(held.trx, {
        from: hold,
        to: ledgerAccounts.available(held.job.accountId),
        amountMicro: remaining,
        kind: 'release',
        reference: held.job.id,
        at: now,
      });
    }
    return remaining;
  }

  async #enqueueStop(held: HeldJob, reason: string, now: Date): Promise<void> {
    const body: StopJobBody = {
      job_id: held.job.id,
      fence: held.job.fence.toString(),
      reason: reason.slice(0, 500),
      // Nothing ran, nothing to fetch: only jobs whose meter started get a retrieval window.
      retrieval_window_s: held.job.meterStartedAt !== null ? this.settings.retrievalWindowS : 0,
    };
    await enqueueCommand(held.trx, { machineId: held.job.machineId, kind: 'stop_job', body, now });
  }

  async #enqueueClean(held: HeldJob, now: Date): Promise<void> {
    await enqueueCommand(held.trx, {
      machineId: held.job.machineId,
      kind: 'clean_job',
      body: { job_id: held.job.id, fence: held.job.fence.toString() },
      now,
    });
  }

  /** -> STOPPING, and stop_job for the agent. `text` is what the renter or operator gave as the reason. */
  async #beginStop(held: HeldJob, reason: CloseReason, now: Date, text?: string): Promise<void> {
    await this.#transition(
      held,
      'STOPPING',
      now,
      { stop_requested_at: iso(now), stop_reason: text ?? null, close_reason: reason },
      { message: STOP_MESSAGES[reason], data: { reason, ...(text !== undefined ? { detail: text } : {}) } },
    );
    held.job.stopRequestedAt = now;
    held.job.closeReason = reason;
    await this.#enqueueStop(held, text ?? reason, now);
  }

  /** -> FAILED: the unspent hold goes back and the agent is told to clean up. */
  async #fail(held: HeldJob, reason: CloseReason, now: Date, data: Record<string, unknown> = {}): Promise<void> {
    await this.#transition(
      held,
      'FAILED',
      now,
      { close_reason: reason, closed_at: iso(now), funded_through: null },
      { message: STOP_MESSAGES[reason], data: { reason, ...data } },
    );
    held.job.closeReason = reason;
    held.job.closedAt = now;
    const released = await this.#releaseHold(held, now);
    await held.events(
      [{ kind: 'hold_released', message: 'The unspent budget went back to your balance.', data: { released_micro: released.toString() } }],
      now,
    );
    await this.#enqueueClean(held, now);
  }

  /** -> CLOSED: the unspent hold goes back. */
  async #close(held: HeldJob, now: Date, reason?: CloseReason): Promise<void> {
    await this.#transition(
      held,
      'CLOSED',
      now,
      { closed_at: iso(now), funded_through: null, ...(reason !== undefined ? { close_reason: held.job.closeReason ?? reason } : {}) },
      {
        message: reason !== undefined ? STOP_MESSAGES[reason] : 'Closed: the container and its volume were removed.',
        data: reason !== undefined ? { reason } : {},
      },
    );
    held.job.closedAt = now;
    const released = await this.#releaseHold(held, now);
    await held.events(
      [{ kind: 'hold_released', message: 'The unspent budget went back to your balance.', data: { released_micro: released.toString() } }],
      now,
    );
  }

  /** -> STOPPED with stopped_at; the retrieval window starts (zero for a job that never ran). */
  async #stopped(held: HeldJob, stoppedAt: Date, now: Date, data: Record<string, unknown>): Promise<void> {
    const windowS = held.job.meterStartedAt !== null ? this.settings.retrievalWindowS : 0;
    const retrievalUntil = new Date(stoppedAt.getTime() + windowS * 1000);
    const closeReason = held.job.closeReason ?? 'container_exited';
    await this.#transition(
      held,
      'STOPPED',
      now,
      { stopped_at: iso(stoppedAt), retrieval_until: iso(retrievalUntil), close_reason: closeReason, funded_through: null },
      { message: windowS > 0 ? `Stopped. Files can be fetched over SFTP until ${iso(retrievalUntil)}.` : 'Stopped.', data },
    );
    held.job = { ...held.job, stoppedAt, retrievalUntil, closeReason };
  }

  // ---------------------------------------------------------------- renter and admin actions

  /**
   * POST /api/v1/jobs/{id}/stop. Before readiness this cancels the launch; while running it stops the container
   * and the final meter receipt follows. A repeat answers STOPPING or the terminal result.
   */
  async stop(jobId: string, caller: { accountId: string; admin: boolean }, reasonText: string, now: Date): Promise<StopAnswerState> {
    const answer = await this.withJob(jobId, async (held) => {
      if (held.job.accountId !== caller.accountId && !caller.admin) throw new DomainError('NOT_FOUND');
      if ((STOPPABLE_STATES as readonly string[]).includes(held.job.state)) {
        const byAdmin = caller.admin && held.job.accountId !== caller.accountId;
        await this.#beginStop(held, byAdmin ? 'stopped_by_admin' : 'stopped_by_renter', now, reasonText);
        return 'STOPPING' as const;
      }
      const state = stopAnswerOf(held.job.state);
      if (state === null) throw new DomainError('JOB_NOT_STOPPABLE');
      return state;
    });
    if (answer === null) throw new DomainError('NOT_FOUND');
    return answer;
  }

  /**
   * POST /api/v1/jobs/{id}/budget-extension: compare-and-set on job_version and budget_version, one immutable
   * amendment plus the hold (available -> hold) atomically, budget_version bumped; the original rate and host
   * ceiling stay.
   */
  async extendBudget(
    jobId: string,
    accountId: string,
    body: BudgetExtensionRequest,
    now: Date,
  ): Promise<{ budgetVersion: bigint; fundedBudgetMicro: bigint }> {
    const additional = BigInt(body.additional_budget_micro);
    const newDurationS = BigInt(body.new_duration_limit_s);
    const result = await this.withJob(jobId, async (held) => {
      const job = held.job;
      if (job.accountId !== accountId) throw new DomainError('NOT_FOUND');
      if (!(EXTENDABLE_STATES as readonly string[]).includes(job.state)) {
        throw new DomainError(
          'JOB_NOT_EXTENDABLE',
          `The job is ${job.state}; budgets can be extended while it is RESERVED, STARTING or RUNNING.`,
        );
      }
      if (BigInt(body.expected_job_version) !== job.jobVersion) {
        throw new DomainError('JOB_VERSION_MISMATCH', `The job is at version ${job.jobVersion}, not ${body.expected_job_version}.`);
      }
      if (BigInt(body.expected_budget_version) !== job.budgetVersion) {
        throw new DomainError(
          'BUDGET_VERSION_MISMATCH',
          `The budget is at version ${job.budgetVersion}, not ${body.expected_budget_version}.`,
        );
      }
      if (newDurationS < job.durationLimitS) {
        throw new DomainError('DURATION_LIMIT_DECREASE', `The duration limit is ${job.durationLimitS} s; the new one must not be shorter.`);
      }
      if (additional === 0n && newDurationS === job.durationLimitS) {
        throw new DomainError('VALIDATION_FAILED', 'body must add budget or lengthen the duration limit');
      }
      const start = job.meterStartedAt ?? now;
      if (start.getTime() + Number(newDurationS) * 1000 > job.hostCeilingAt.getTime()) {
        throw new DomainError(
          'HOST_CEILING_EXCEEDED',
          `The machine is available until ${iso(job.hostCeilingAt)}; the new duration limit would pass it.`,
        );
      }
      if (additional > 0n) {
        await transfer(held.trx, {
          from: ledgerAccounts.available(job.accountId),
          to: ledgerAccounts.hold(job.id, job.accountId),
          amountMicro: additional,
          kind: 'extension',
          reference: job.id,
          at: now,
        });
      }
      const budgetVersion = job.budgetVersion + 1n;
      const funded = job.fundedBudgetMicro + additional;
      await insertAmendment(held.trx, {
        id: randomUUID(),
        jobId: job.id,
        accountId,
        budgetVersion,
        additionalBudgetMicro: additional,
        fundedBudgetMicro: funded,
        previousDurationLimitS: job.durationLimitS,
        newDurationLimitS: newDurationS,
        now,
      });
      const updated = { ...job, fundedBudgetMicro: funded, durationLimitS: newDurationS };
      await updateJob(held.trx, job.id, {
        funded_budget_micro: funded,
        duration_limit_s: newDurationS,
        budget_version: budgetVersion,
        job_version: job.jobVersion + 1n,
        funded_through: job.meterStartedAt !== null ? iso(fundedThrough(fundingOf(updated), job.meterStartedAt).at) : null,
        updated_at: iso(now),
      });
      held.job = { ...updated, budgetVersion, jobVersion: job.jobVersion + 1n };
      await held.events(
        [
          {
            kind: 'budget_extended',
            message: `Budget extended by ${additional} micro to ${funded} micro; duration limit ${newDurationS} s.`,
            data: {
              budget_version: budgetVersion.toString(),
              additional_budget_micro: additional.toString(),
              funded_budget_micro: funded.toString(),
              duration_limit_s: Number(newDurationS),
            },
          },
        ],
        now,
      );
      return { budgetVersion, fundedBudgetMicro: funded };
    });
    if (result === null) throw new DomainError('NOT_FOUND');
    return result;
  }

  // ---------------------------------------------------------------- agent messages

  /** The 'job_status' handler: applied once per message id inside the gateway's transaction. */
  async applyJobStatus(trx: Tx, machineId: string, msg: JobStatusMessage, now: Date): Promise<void> {
    const found = await this.#hold(trx, msg.job_id);
    // Another machine's job (or an unknown one): nothing of it is touched, nothing is told.
    if (!found || found.row.machine_id !== machineId) return;
    const { held, row } = found;
    const fence = BigInt(msg.fence);
    if (fence !== held.job.fence) {
      await held.events(
        [
          {
            kind: 'status_refused',
            message: `Agent status "${msg.status}" refused: ${fence < held.job.fence ? 'stale' : 'unknown'} fence ${fence} (the job is at ${held.job.fence}).`,
            data: { status: msg.status, fence: fence.toString(), current_fence: held.job.fence.toString() },
          },
        ],
        now,
      );
      return;
    }
    const state = held.job.state;
    const detail = msg.detail !== undefined ? { detail: msg.detail } : {};
    const exitCode = msg.exit_code !== undefined ? { exit_code: msg.exit_code } : {};
    switch (msg.status) {
      case 'accepted':
        if (state === 'RESERVED') await this.#transition(held, 'STARTING', now, {}, { message: 'The machine accepted the launch.' });
        return;
      case 'pulling':
      case 'starting': {
        if (state === 'RESERVED') await this.#transition(held, 'STARTING', now, {}, { message: 'The machine accepted the launch.' });
        if (held.job.state !== 'STARTING') return;
        if (msg.status === 'starting') {
          await held.events([{ kind: 'container_starting', message: 'The image is pulled; the container is starting.', data: {} }], now);
          return;
        }
        const pct = msg.progress_pct ?? null;
        const last = held.job.pullProgressPct;
        // Coalesced: an event per 10 points of progress, and the end.
        if (pct === null || (last !== null && pct < last + 10 && !(pct === 100 && last !== 100))) return;
        await updateJob(trx, held.job.id, { pull_progress_pct: BigInt(pct) });
        await held.events([{ kind: 'pull_progress', message: `Pulling the image: ${pct}%.`, data: { progress_pct: pct } }], now);
        return;
      }
      case 'ready':
        return this.#onReady(held, row, msg, now);
      case 'exited':
        if (state === 'RUNNING' || state === 'RECONCILING') {
          await held.events([{ kind: 'container_exited', message: 'The container exited.', data: { ...exitCode, ...detail } }], now);
          await this.#beginStop(held, 'container_exited', now);
        } else if (state === 'RESERVED' || state === 'STARTING') {
          await this.#fail(held, 'launch_failed', now, { ...exitCode, ...detail });
        } else {
          await held.events([{ kind: 'container_exited', message: 'The container exited.', data: { ...exitCode, ...detail } }], now);
        }
        return;
      case 'failed':
        if (state === 'RESERVED' || state === 'STARTING') await this.#fail(held, 'launch_failed', now, { ...exitCode, ...detail });
        else if (state === 'RUNNING' || state === 'RECONCILING') await this.#fail(held, 'job_failed', now, { ...exitCode, ...detail });
        else if (state === 'STOPPING') {
          // A stop was asked for: the job ends the normal way, with the failure on record.
          await held.events(
            [{ kind: 'agent_failure', message: 'The machine reported a failure while stopping.', data: { ...exitCode, ...detail } }],
            now,
          );
          await this.#stopped(held, agentInstant(msg.at, now, held.job.createdAt), now, {});
        }
        return;
      case 'stopped':
        if (state === 'STOPPING' || state === 'RUNNING' || state === 'RECONCILING' || state === 'RESERVED' || state === 'STARTING') {
          const stoppedAt = agentInstant(msg.at, now, held.job.stopRequestedAt ?? held.job.createdAt);
          await this.#stopped(held, stoppedAt, now, { ...exitCode, ...detail });
        }
        return;
      case 'cleaned':
        if (state === 'STOPPED') await this.#transition(held, 'CLEANING', now, {}, { message: 'The machine cleaned the job early.' });
        if (held.job.state === 'CLEANING' || held.job.state === 'STOPPING') await this.#close(held, now);
        return;
    }
  }

  async #onReady(held: HeldJob, row: JobRow, msg: JobStatusMessage, now: Date): Promise<void> {
    const state = held.job.state;
    const access: JobAccessReport | null = msg.access
      ? {
          sshPort: msg.access.ssh_port,
          sshHostKeyFingerprint: msg.access.ssh_host_key_fingerprint,
          publicHost: msg.access.public_host ?? null,
          ports: msg.access.ports.map((p) => ({ containerPort: p.container_port, hostPort: p.host_port, protocol: p.protocol })),
        }
      : held.job.access;
    if (state === 'RESERVED' || state === 'STARTING') {
      if (access === null) {
        // Readiness without a way in is no readiness for a renter.
        await held.events(
          [{ kind: 'status_refused', message: 'Readiness refused: the agent reported no access details.', data: { status: 'ready' } }],
          now,
        );
        return;
      }
      const startedAt = agentInstant(msg.at, now, held.job.createdAt);
      const funded = fundedThrough(fundingOf(held.job), startedAt).at;
      if (state === 'RESERVED') await this.#transition(held, 'STARTING', now, {}, { message: 'The machine accepted the launch.' });
      await this.#transition(
        held,
        'RUNNING',
        now,
        {
          meter_started_at: iso(startedAt),
          meter_floor_at: iso(startedAt),
          metered_until: null,
          meter_seq: 0n,
          access: accessToJson(access),
          funded_through: iso(funded),
        },
        {
          message: 'Running: readiness verified, the meter started.',
          data: { meter_started_at: iso(startedAt), evidence: msg.evidence ?? {} },
        },
      );
      held.job = { ...held.job, meterStartedAt: startedAt, meterFloorAt: startedAt, access };
      if (held.job.template !== null) await this.#qualify(held, row, msg, now);
      return;
    }
    if (state === 'RUNNING') {
      if (access !== null) await updateJob(held.trx, held.job.id, { access: accessToJson(access), updated_at: iso(now) });
      return;
    }
    if (state === 'RECONCILING') {
      await this.#returnFromReconciling(held, row, now, 'readiness');
      if (access !== null) await updateJob(held.trx, held.job.id, { access: accessToJson(access) });
      return;
    }
    await held.events(
      [{ kind: 'status_ignored', message: `Readiness reported while the job is ${state}; ignored.`, data: { status: 'ready' } }],
      now,
    );
  }

  /** A template job became ready: the machine proved it runs the template (image by digest, VRAM fits). */
  async #qualify(held: HeldJob, row: JobRow, msg: JobStatusMessage, now: Date): Promise<void> {
    const template = held.job.template;
    if (template === null) return;
    const machine = await findMachine(held.trx, row.machine_id);
    const manifest = machine ? (fromJson<MachineManifest>(machine.manifest) as MachineManifest) : null;
    const result = await recordAgentQualification(held.trx, {
      templateId: template.id,
      machineId: row.machine_id,
      now,
      detail: {
        imageDigest: held.job.imageDigest,
        deviceVramBytes: manifest ? deviceVram(manifest, held.job.gpuPciAddresses) : [],
        jobId: held.job.id,
        ...(msg.evidence !== undefined ? { evidence: msg.evidence as Record<string, unknown> } : {}),
      },
    });
    if (!result.recorded) {
      await held.events(
        [
          {
            kind: 'qualification_skipped',
            message: `The template was not qualified on this machine: ${result.reason}.`,
            data: { reason: result.reason },
          },
        ],
        now,
      );
    }
  }

  /**
   * RECONCILING -> RUNNING: the agent is back with the container running. The job is bound to the agent's new
   * session with a fresh fence (launch_job again, which the agent treats as a rebind: it adopts the fence and
   * restarts its meter sequence); runtime before now is never charged (the gap).
   */
  async #returnFromReconciling(held: HeldJob, row: JobRow, now: Date, via: 'heartbeat' | 'readiness'): Promise<void> {
    const fence = held.job.fence + 1n;
    await this.#transition(
      held,
      'RUNNING',
      now,
      { fence, meter_seq: 0n, meter_floor_at: iso(now) },
      {
        message: 'The machine is back with the container running; the job is rebound with a new fence.',
        data: { fence: fence.toString(), via },
      },
    );
    held.job = { ...held.job, fence, meterSeq: 0n, meterFloorAt: now };
    await enqueueCommand(held.trx, { machineId: held.job.machineId, kind: 'launch_job', body: this.#launchOf(row, fence), now });
  }

  /** The 'meter_receipt' handler: applied once per message id inside the gateway's transaction. */
  async applyMeterReceipt(trx: Tx, machineId: string, msg: MeterReceiptMessage, now: Date): Promise<void> {
    const found = await this.#hold(trx, msg.job_id);
    if (!found || found.row.machine_id !== machineId) return;
    const { held } = found;
    const job = held.job;
    const verdict = evaluateReceipt(
      meterStateOf(job),
      {
        fence: BigInt(msg.fence),
        seq: BigInt(msg.meter_seq),
        periodStart: new Date(msg.period_start),
        periodEnd: new Date(msg.period_end),
        runtimeMs: BigInt(msg.runtime_ms),
      },
      now,
      this.settings.meterSkewMs,
    );
    if (verdict.outcome === 'duplicate') return;
    if (verdict.outcome !== 'accepted') {
      // A rejected period uses up its seq (the meter moves on); a refused receipt leaves the sequence alone.
      if (verdict.outcome === 'rejected') await updateJob(trx, job.id, { meter_seq: BigInt(msg.meter_seq), updated_at: iso(now) });
      await held.events(
        [
          {
            kind: 'receipt_refused',
            message: describeReceiptVerdict(verdict),
            data: { reason: verdict.reason, fence: msg.fence, meter_seq: msg.meter_seq, runtime_ms: msg.runtime_ms },
          },
        ],
        now,
      );
      return;
    }
    const runtime = job.acceptedRuntimeMs + verdict.countedMs;
    const charges = chargesFor(job.rate, job.fundedBudgetMicro, runtime);
    const delta = chargeDelta({ hostMicro: job.chargedHostMicro, feeMicro: job.chargedFeeMicro }, charges);
    await postMeteredCharge(trx, {
      jobId: job.id,
      renterAccountId: job.accountId,
      hostAccountId: job.hostAccountId,
      hostMicro: delta.hostMicro,
      feeMicro: delta.feeMicro,
      first: job.cumulativeChargeMicro === 0n,
      at: now,
    });
    await updateJob(trx, job.id, {
      accepted_runtime_ms: runtime,
      cumulative_charge_micro: charges.cumulativeMicro,
      charged_host_micro: charges.hostMicro,
      charged_fee_micro: charges.feeMicro,
      meter_seq: BigInt(msg.meter_seq),
      metered_until: iso(verdict.meteredUntil),
      last_meter_receipt_at: iso(now),
      updated_at: iso(now),
    });
    held.job = {
      ...job,
      acceptedRuntimeMs: runtime,
      cumulativeChargeMicro: charges.cumulativeMicro,
      chargedHostMicro: charges.hostMicro,
      chargedFeeMicro: charges.feeMicro,
      meterSeq: BigInt(msg.meter_seq),
      meteredUntil: verdict.meteredUntil,
      lastMeterReceiptAt: now,
    };
    if (verdict.uncountedMs > 1000n) {
      await held.events(
        [
          {
            kind: 'receipt_partly_counted',
            message: `Meter receipt ${msg.meter_seq}: ${verdict.uncountedMs} ms were not charged (before the meter floor, already metered, or past a limit).`,
            data: { meter_seq: msg.meter_seq, counted_ms: verdict.countedMs.toString(), uncounted_ms: verdict.uncountedMs.toString() },
          },
        ],
        now,
      );
    }
    if (held.job.state === 'RUNNING') {
      if (charges.cumulativeMicro >= job.fundedBudgetMicro) await this.#beginStop(held, 'budget_exhausted', now);
      else {
        const funded = fundedThrough(fundingOf(held.job), held.job.meterStartedAt as Date);
        if (funded.at.getTime() <= now.getTime()) await this.#beginStop(held, BOUND_REASON[funded.bound], now);
      }
    }
  }

  /**
   * The heartbeat hook: a RECONCILING job whose container the agent lists as running under the job's fence goes
   * back to RUNNING. Cheap when nothing reconciles: one indexed read, and only when the agent lists running jobs.
   */
  async onHeartbeat(machineId: string, msg: HeartbeatMessage, now: Date): Promise<number> {
    const running = msg.running_jobs.filter((j) => j.container_state === 'running');
    if (running.length === 0) return 0;
    const reconciling = new Set(await jobIdsOfMachine(this.store.db, machineId, ['RECONCILING']));
    let returned = 0;
    for (const listed of running) {
      if (!reconciling.has(listed.job_id)) continue;
      const moved = await this.withJob(listed.job_id, async (held, row) => {
        if (held.job.state !== 'RECONCILING' || row.machine_id !== machineId || BigInt(listed.fence) !== held.job.fence) return false;
        await this.#returnFromReconciling(held, row, now, 'heartbeat');
        return true;
      });
      if (moved) returned += 1;
    }
    return returned;
  }

  // ---------------------------------------------------------------- sweeps

  /** RUNNING jobs whose funded_through has passed (budget time, duration limit or host ceiling) are stopped. */
  async sweepFunding(now: Date): Promise<number> {
    const ids = await jobIdsInStates(this.store.db, ['RUNNING'], { fundedThroughAtOrBefore: now, limit: SWEEP_BATCH });
    let moved = 0;
    for (const id of ids) {
      const done = await this.withJob(id, async (held) => {
        if (held.job.state !== 'RUNNING' || held.job.meterStartedAt === null) return false;
        const funded = fundedThrough(fundingOf(held.job), held.job.meterStartedAt);
        if (funded.at.getTime() > now.getTime()) return false;
        await this.#beginStop(held, BOUND_REASON[funded.bound], now);
        return true;
      });
      if (done) moved += 1;
    }
    return moved;
  }

  /**
   * Silent machines: RUNNING jobs move to RECONCILING past the grace; RECONCILING jobs fail past the reconcile
   * timeout (hold released); jobs waiting to start fail, and stopping or cleaning jobs close, once the machine has
   * been silent for grace + timeout.
   */
  async sweepLiveness(now: Date): Promise<number> {
    const { agentGraceMs, reconcileTimeoutMs } = this.settings;
    const graceAgo = new Date(now.getTime() - agentGraceMs);
    const lostAgo = new Date(now.getTime() - agentGraceMs - reconcileTimeoutMs);
    let moved = 0;
    const silentRunning = await jobIdsOnSilentMachines(this.store.db, ['RUNNING'], graceAgo, graceAgo, SWEEP_BATCH);
    for (const id of silentRunning) {
      const done = await this.withJob(id, async (held) => {
        if (held.job.state !== 'RUNNING' || !(await this.#machineSilentSince(held.trx, held.job.machineId, graceAgo))) return false;
        await this.#transition(
          held,
          'RECONCILING',
          now,
          {},
          { message: 'The machine went silent; no receipts are accepted until it is back.', data: { reason: 'agent_silent' } },
        );
        return true;
      });
      if (done) moved += 1;
    }
    const timedOut = await jobIdsInStates(this.store.db, ['RECONCILING'], {
      stateChangedBefore: new Date(now.getTime() - reconcileTimeoutMs),
      limit: SWEEP_BATCH,
    });
    for (const id of timedOut) {
      const done = await this.withJob(id, async (held) => {
        if (held.job.state !== 'RECONCILING' || held.job.stateChangedAt.getTime() >= now.getTime() - reconcileTimeoutMs) return false;
        await this.#fail(held, 'agent_lost', now);
        return true;
      });
      if (done) moved += 1;
    }
    const lost = await jobIdsOnSilentMachines(
      this.store.db,
      ['RESERVED', 'STARTING', 'STOPPING', 'CLEANING'],
      lostAgo,
      lostAgo,
      SWEEP_BATCH,
    );
    for (const id of lost) {
      const done = await this.withJob(id, async (held) => {
        if (!(await this.#machineSilentSince(held.trx, held.job.machineId, lostAgo))) return false;
        if (held.job.stateChangedAt.getTime() >= lostAgo.getTime()) return false;
        if (held.job.state === 'RESERVED' || held.job.state === 'STARTING') await this.#fail(held, 'agent_lost', now);
        else if (held.job.state === 'STOPPING' || held.job.state === 'CLEANING') await this.#close(held, now, 'machine_lost');
        else return false;
        return true;
      });
      if (done) moved += 1;
    }
    return moved;
  }

  async #machineSilentSince(db: Executor, machineId: string, since: Date): Promise<boolean> {
    const row = await db.selectFrom('machines').select('last_heartbeat_at').where('id', '=', machineId).executeTakeFirst();
    // A heartbeat buffered in this process (store/heartbeats.ts) counts; other replicas' lag by at most 1 s.
    const last = row ? lastHeartbeatAtOf(this.store, machineId, row.last_heartbeat_at) : null;
    return !last || last < iso(since);
  }

  /** Jobs that did not become ready within the start timeout of their reservation are cancelled. */
  async sweepStartTimeout(now: Date): Promise<number> {
    const before = new Date(now.getTime() - this.settings.startTimeoutMs);
    const rows = await this.store.db
      .selectFrom('jobs')
      .select('id')
      .where('state', 'in', ['RESERVED', 'STARTING'])
      .where('created_at', '<', iso(before))
      .orderBy('created_at')
      .limit(SWEEP_BATCH)
      .execute();
    let moved = 0;
    for (const { id } of rows) {
      const done = await this.withJob(id, async (held) => {
        if ((held.job.state !== 'RESERVED' && held.job.state !== 'STARTING') || held.job.createdAt.getTime() >= before.getTime())
          return false;
        await this.#beginStop(held, 'start_timeout', now);
        return true;
      });
      if (done) moved += 1;
    }
    return moved;
  }

  /** STOPPED jobs whose retrieval window ended move to CLEANING; the agent removes container and volume. */
  async sweepRetrieval(now: Date): Promise<number> {
    const ids = await jobIdsInStates(this.store.db, ['STOPPED'], { retrievalEndedAt: now, limit: SWEEP_BATCH });
    let moved = 0;
    for (const id of ids) {
      const done = await this.withJob(id, async (held) => {
        if (held.job.state !== 'STOPPED' || (held.job.retrievalUntil !== null && held.job.retrievalUntil.getTime() > now.getTime()))
          return false;
        await this.#transition(
          held,
          'CLEANING',
          now,
          {},
          { message: 'The retrieval window ended; the machine removes the container and its volume.' },
        );
        await this.#enqueueClean(held, now);
        return true;
      });
      if (done) moved += 1;
    }
    return moved;
  }

  /** Unused quotes are deleted an hour after they expire. */
  async purgeQuotes(now: Date): Promise<number> {
    return purgeExpiredQuotes(this.store.db, now);
  }
}

/**
 * Locks the machine's agent channel row (Postgres; SQLite serialises writers). One lock order everywhere: channel
 * row, then job row, then ledger accounts in key order. The gateway's transaction starts with the channel row (it
 * marks the message applied), and queuing a command takes it too.
 */
async function lockMachineChannel(trx: Tx, machineId: string): Promise<void> {
  if (!isPostgres(trx)) return;
  await trx.selectFrom('agent_channel_state').select('machine_id').where('machine_id', '=', machineId).forUpdate().execute();
}

/** The job's meter, as the receipt rules see it. */
export function meterStateOf(job: JobRecord): MeterState {
  return {
    metering: job.state === 'RUNNING' || job.state === 'STOPPING',
    fence: job.fence,
    lastSeq: job.meterSeq,
    meterStartedAt: job.meterStartedAt,
    meterFloorAt: job.meterFloorAt,
    meteredUntil: job.meteredUntil,
    durationLimitMs: job.durationLimitS * 1000n,
    hostCeilingAt: job.hostCeilingAt,
  };
}

/** Measured VRAM of the given GPUs (every GPU when `pciAddresses` is empty and the job takes none: []). */
function deviceVram(manifest: MachineManifest, pciAddresses: readonly string[]): bigint[] {
  return manifest.gpus.filter((g) => pciAddresses.includes(g.pci_address)).map((g) => BigInt(g.vram_bytes));
}
