import type { StopJobBody } from '@ark/shared';
import { iso } from '../../clock.js';
import { STOP_MESSAGES, retrievalWindowSOf } from '../../domain/jobs/ending.js';
import type { JobRecord } from '../../domain/jobs/job.js';
import { assertTransition, type CloseReason } from '../../domain/jobs/states.js';
import { ledgerAccounts } from '../../domain/ledger/accounts.js';
import type { Tx } from '../../store/db.js';
import { appendJobEvents, type NewJobEvent } from '../../store/job-events.js';
import { deleteReadiness } from '../../store/job-readiness.js';
import { type JobRow, lockJob, machineIdOfJob, toJobRecord, updateJob } from '../../store/jobs.js';
import { balanceOf, transfer } from '../../store/ledger.js';
import { lockMachineChannel } from '../../store/outbox.js';
import { inTransactionWithRetry } from '../../store/transaction.js';
import { emitWebhookEvent } from '../../store/webhooks.js';
import { type CreditPoint, creditFailedJob } from './credit.js';
import type { JobDeps } from './deps.js';

// A job row held inside one transaction, and the writes the job use cases make to it: transitions with their events,
// the hold released, stop_job / clean_job / launch_job queued. One lock order everywhere: the machine's channel row,
// then the job row, then ledger accounts in key order (store/ledger.ts), then the outbox (the channel row again).

type JobPatch = Parameters<typeof updateJob>[2];

export class HeldJob {
  readonly trx: Tx;
  /** The row as held: the sealed launch, env and engine key are read from it. */
  readonly row: JobRow;
  job: JobRecord;
  readonly #deps: JobDeps;
  #secrets: string[] | null = null;

  constructor(deps: JobDeps, trx: Tx, row: JobRow) {
    this.#deps = deps;
    this.trx = trx;
    this.row = row;
    this.job = toJobRecord(row);
  }

  /** The renter's variables and the engine key: redacted from anything an agent reports. */
  secrets(): string[] {
    this.#secrets ??= this.#deps.secrets.secretsOf(this.job.id, this.row.env_sealed, this.row.engine_key_sealed);
    return this.#secrets;
  }

  /** Appends events; the job's secrets are redacted from all of them (agent text can reach any of them). */
  async events(events: NewJobEvent[], now: Date): Promise<void> {
    await appendJobEvents(this.trx, this.job, events, now, this.secrets());
  }

  /** Writes columns that move nothing the renter versions (access, pull progress, meter counters). */
  async update(patch: JobPatch): Promise<void> {
    await updateJob(this.trx, this.job.id, patch);
  }

  /** Moves the job to `to`, writing `patch`, bumping job_version and recording the transition. */
  async transition(
    to: JobRecord['state'],
    now: Date,
    patch: JobPatch = {},
    event?: { message: string; data?: Record<string, unknown> },
  ): Promise<void> {
    const from = this.job.state;
    assertTransition(from, to);
    const jobVersion = this.job.jobVersion + 1n;
    await updateJob(this.trx, this.job.id, {
      ...patch,
      state: to,
      job_version: jobVersion,
      state_changed_at: iso(now),
      updated_at: iso(now),
    });
    this.job = { ...this.job, state: to, jobVersion, stateChangedAt: now };
    // A job leaving STARTING (verified, failed, stopped) has no readiness left to verify.
    if (from === 'STARTING') await deleteReadiness(this.trx, this.job.id);
    await this.events(
      [{ kind: 'state_changed', message: event?.message ?? `${from} -> ${to}.`, data: { from, to, ...(event?.data ?? {}) } }],
      now,
    );
    await emitJobStateChanged(this.trx, this.job, from, now);
  }

  /** -> STOPPING, and stop_job for the agent. `text` is what the renter or operator gave as the reason. */
  async beginStop(reason: CloseReason, now: Date, text?: string): Promise<void> {
    await this.transition(
      'STOPPING',
      now,
      { stop_requested_at: iso(now), stop_reason: text ?? null, close_reason: reason },
      { message: STOP_MESSAGES[reason], data: { reason, ...(text !== undefined ? { detail: text } : {}) } },
    );
    this.job.stopRequestedAt = now;
    this.job.closeReason = reason;
    const body: StopJobBody = {
      job_id: this.job.id,
      fence: this.job.fence.toString(),
      reason: (text ?? reason).slice(0, 500),
      retrieval_window_s: retrievalWindowSOf(this.job, this.#deps.settings.retrievalWindowS),
    };
    await this.#deps.outbox.enqueue(this.trx, { machineId: this.job.machineId, kind: 'stop_job', body, now });
  }

  /**
   * -> FAILED: the unspent hold goes back and the agent is told to clean up. A failure on the host's side also credits
   * the renter, in this same transaction (services/jobs/credit.ts, issue 24 item 3); `credit` gives its healthy
   * point where the failure knows a better one than the machine's last heartbeat (a GPU lost per telemetry).
   */
  async fail(reason: CloseReason, now: Date, data: Record<string, unknown> = {}, credit: CreditPoint = {}): Promise<void> {
    await this.transition(
      'FAILED',
      now,
      { close_reason: reason, closed_at: iso(now), funded_through: null },
      { message: STOP_MESSAGES[reason], data: { reason, ...data } },
    );
    this.job.closeReason = reason;
    this.job.closedAt = now;
    await this.#releaseHold(now);
    await this.enqueueClean(now);
    await creditFailedJob(this.#deps, this, reason, now, credit);
  }

  /**
   * -> CLOSED. From STOPPING (the machine cleaned or vanished before confirming the stop) the unspent hold goes back
   * now; from CLEANING it went back at STOPPED, and only what a job stopped before that rule still holds is returned.
   * A reason is given when the job closes without the agent's word.
   */
  async close(now: Date, reason?: CloseReason): Promise<void> {
    const releasedAtStop = this.job.state === 'CLEANING';
    await this.transition(
      'CLOSED',
      now,
      { closed_at: iso(now), funded_through: null, ...(reason !== undefined ? { close_reason: this.job.closeReason ?? reason } : {}) },
      {
        message: reason !== undefined ? STOP_MESSAGES[reason] : 'Closed: the container and its volume were removed.',
        data: reason !== undefined ? { reason } : {},
      },
    );
    this.job.closedAt = now;
    await this.#releaseHold(now, { skipWhenEmpty: releasedAtStop });
  }

  /**
   * -> STOPPED with stopped_at; the retrieval window starts (zero for a job that never ran) and the unspent hold goes
   * back at once: the retrieval window holds storage, not money. The agent sends its final receipt before it reports
   * stopped, and the channel applies a machine's messages in order, so every receipt it will send is settled by now;
   * a receipt arriving later is refused (STOPPED is no metering state), so nothing is ever charged past the release.
   */
  async stopped(stoppedAt: Date, now: Date, data: Record<string, unknown>): Promise<void> {
    const windowS = retrievalWindowSOf(this.job, this.#deps.settings.retrievalWindowS);
    const retrievalUntil = new Date(stoppedAt.getTime() + windowS * 1000);
    const closeReason = this.job.closeReason ?? 'container_exited';
    await this.transition(
      'STOPPED',
      now,
      { stopped_at: iso(stoppedAt), retrieval_until: iso(retrievalUntil), close_reason: closeReason, funded_through: null },
      { message: windowS > 0 ? `Stopped. Files can be fetched over SFTP until ${iso(retrievalUntil)}.` : 'Stopped.', data },
    );
    this.job = { ...this.job, stoppedAt, retrievalUntil, closeReason };
    await this.#releaseHold(now);
  }

  /**
   * RECONCILING -> RUNNING: the agent is back with the container running. The job is bound to the agent's new
   * session with a fresh fence (launch_job again, which the agent treats as a rebind: it adopts the fence and
   * restarts its meter sequence); runtime before now is never charged (the gap).
   */
  async rebind(now: Date, via: 'heartbeat' | 'readiness', message: string): Promise<void> {
    const fence = this.job.fence + 1n;
    await this.transition(
      'RUNNING',
      now,
      { fence, meter_seq: 0n, meter_floor_at: iso(now) },
      { message, data: { fence: fence.toString(), via } },
    );
    this.job = { ...this.job, fence, meterSeq: 0n, meterFloorAt: now };
    const launch = this.#deps.secrets.openLaunch(this.job.id, this.row.launch_sealed, fence);
    await this.#deps.outbox.enqueue(this.trx, { machineId: this.job.machineId, kind: 'launch_job', body: launch, now });
  }

  async enqueueClean(now: Date): Promise<void> {
    await this.#deps.outbox.enqueue(this.trx, {
      machineId: this.job.machineId,
      kind: 'clean_job',
      body: { job_id: this.job.id, fence: this.job.fence.toString() },
      now,
    });
  }

  /**
   * Returns what is left of the job's hold to the renter's available balance, with an event saying how much.
   * `skipWhenEmpty`: the hold was released before, so an empty one is no news (no second event).
   */
  async #releaseHold(now: Date, options: { skipWhenEmpty?: boolean } = {}): Promise<void> {
    const hold = ledgerAccounts.hold(this.job.id, this.job.accountId);
    const remaining = await balanceOf(this.trx, hold);
    if (remaining === 0n && options.skipWhenEmpty === true) return;
    if (remaining > 0n) {
      await transfer(this.trx, {
        from: hold,
        to: ledgerAccounts.available(this.job.accountId),
        amountMicro: remaining,
        kind: 'release',
        reference: this.job.id,
        at: now,
      });
    }
    await this.events(
      [{ kind: 'hold_released', message: 'The unspent budget went back to your balance.', data: { released_micro: remaining.toString() } }],
      now,
    );
  }
}

/** Tells the renter and the host (`job.state_changed`, issue 10), in the transaction that moves the job. */
export async function emitJobStateChanged(
  trx: Tx,
  job: Pick<JobRecord, 'id' | 'state' | 'machineId' | 'accountId' | 'hostAccountId'>,
  from: JobRecord['state'] | null,
  now: Date,
): Promise<void> {
  const data = { job_id: job.id, from, to: job.state, machine_id: job.machineId };
  for (const accountId of new Set([job.accountId, job.hostAccountId]))
    await emitWebhookEvent(trx, accountId, 'job.state_changed', data, now);
}

/** The job row held in the caller's transaction, which already holds the machine's channel row (the gateway's). */
export async function holdJob(deps: JobDeps, trx: Tx, jobId: string): Promise<HeldJob | null> {
  const row = await lockJob(trx, jobId);
  return row ? new HeldJob(deps, trx, row) : null;
}

/**
 * The job row held in the caller's transaction, after the machine's channel row: the gateway applies a machine's
 * messages holding its channel row, then the job row, so routes and sweeps take them in that order too, or a stop
 * racing a receipt would deadlock.
 */
export async function holdJobAfterChannel(deps: JobDeps, trx: Tx, jobId: string): Promise<HeldJob | null> {
  const machineId = await machineIdOfJob(trx, jobId);
  if (machineId === null) return null;
  await lockMachineChannel(trx, machineId);
  return holdJob(deps, trx, jobId);
}

/** Runs `work` on the held job in its own transaction (the sweeps); null when there is no such job. */
export function withJob<T>(deps: JobDeps, jobId: string, work: (held: HeldJob) => Promise<T>): Promise<T | null> {
  return inTransactionWithRetry(deps.store, async (trx) => {
    const held = await holdJobAfterChannel(deps, trx, jobId);
    return held ? work(held) : null;
  });
}
