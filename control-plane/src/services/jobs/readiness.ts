import { randomUUID } from 'node:crypto';
import { iso } from '../../clock.js';
import { accessEndpointOf, type JobAccessReport, type JobRecord } from '../../domain/jobs/job.js';
import {
  afterFailedAttempt,
  checkHostKey,
  checkModels,
  endpointText,
  MAX_MODELS_RECORDED,
  READINESS_MESSAGES,
  type ReadinessAttempt,
  readinessDeadlineOf,
} from '../../domain/jobs/readiness.js';
import { fromJson } from '../../store/db.js';
import {
  claimReadiness,
  deferReadiness,
  dueReadiness,
  type JobReadinessRow,
  readinessOf,
  setMachineReadinessProblem,
} from '../../store/job-readiness.js';
import { findJob } from '../../store/jobs.js';
import type { ClockTimer } from '../../clock.js';
import type { JobDeps } from './deps.js';
import { type HeldJob, withJob } from './held-job.js';
import { startMeter } from './meter-start.js';
import { ReadinessProbeError } from './readiness-probes.js';

// The readiness verifier (issue 24 item 1): takes the jobs the agent reported ready (their job_readiness rows), checks
// each endpoint the way a renter will reach it, and moves the job STARTING -> RUNNING, meter started at the moment the
// host key was verified; or retries with a doubling wait, and past the start timeout fails the job (hold released,
// nothing charged, the host told by a job event and a machine problem).
//
// Once across replicas: a row is claimed by compare-and-set for longer than one attempt can take, only by the replica
// holding the machine's channel (the relay reaches the engine from there). A replica that dies mid-attempt leaves a
// claim that runs out; the row is taken again (after a restart, or by whichever replica the agent reconnects to). The
// move to RUNNING re-checks, with the job row held, that the job is still STARTING under the same fence and that
// this replica still holds the claim: a late attempt moves nothing.
//
// Bounded: at most `concurrency` attempts in flight per process, each probe bounded by its own timeouts; the probes
// are sockets and timers on the injected clock, never a blocking call.

export interface ReadinessVerifier {
  /** Runs an attempt for every due row this process may take, up to the free slots; resolves when they are done. */
  verifyDue(now: Date): Promise<number>;
  /**
   * A readiness report committed (gateway/handlers-table.ts), or a slot freed while due rows waited: a pass runs on the
   * next turn of the event loop, not on the worker's next tick (its interval is only the safety net).
   */
  wake(): void;
  /** Attempts in flight here (tests, metrics). */
  readonly inFlight: number;
  /** Stops waking and waits for attempts in flight. */
  close(): Promise<void>;
}

/** Rows read per pass: more than the free slots, since rows of machines held by other replicas are passed over. */
const CANDIDATES_PER_PASS = 200;

export function readinessVerifier(deps: JobDeps): ReadinessVerifier {
  const settings = deps.settings.readiness;
  const claimant = randomUUID();
  // Longer than any one attempt: connect + handshake + the engine's list, and room for the store.
  const claimMs = settings.connectTimeoutMs + settings.handshakeTimeoutMs + settings.engineTimeoutMs + 10_000;
  const inFlight = new Map<string, Promise<void>>();
  let wakeTimer: ClockTimer | null = null;
  let closed = false;
  // A pass left due rows behind for want of a free slot: the first attempt to end wakes a pass for them, so they do
  // not wait for the worker's next tick (the worker stays the safety net for claims that ran out and restarts).
  let passedOver = false;

  const attempt = async (row: JobReadinessRow): Promise<void> => {
    const job = await findJob(deps.store.db, row.job_id);
    if (job === null || job.state !== 'STARTING' || job.fence !== row.fence || job.access === null) return;
    const result = await probe(deps, job, job.access);
    await withJob(deps, job.id, async (held) => {
      const current = await readinessOf(held.trx, job.id);
      // Moved on meanwhile (stopped, failed, timed out, re-reported under a new fence) or taken over: nothing to do.
      if (held.job.state !== 'STARTING' || held.job.fence !== row.fence || current?.claimed_by !== claimant) return;
      const now = deps.clock.now();
      if (result.ok) await verified(held, current.evidence, result, now);
      else await notVerified(deps, held, current, result.reason, now);
    });
  };

  const verifier: ReadinessVerifier = {
    get inFlight() {
      return inFlight.size;
    },
    async verifyDue(now) {
      if (closed || !settings.verify) return 0;
      const rows = await dueReadiness(deps.store.db, now, CANDIDATES_PER_PASS);
      const started: Promise<void>[] = [];
      for (const row of rows) {
        if (inFlight.size >= settings.concurrency) {
          passedOver = true;
          break;
        }
        if (inFlight.has(row.job_id) || !deps.readinessProbes.engine.reaches(row.machine_id)) continue;
        const until = new Date(now.getTime() + claimMs);
        if (!(await claimReadiness(deps.store.db, row.job_id, claimant, now, until))) continue;
        const run = attempt(row).finally(() => {
          inFlight.delete(row.job_id);
          if (passedOver) {
            passedOver = false;
            verifier.wake();
          }
        });
        inFlight.set(row.job_id, run);
        started.push(run);
      }
      const outcomes = await Promise.allSettled(started);
      for (const outcome of outcomes)
        if (outcome.status === 'rejected') deps.logger?.error({ err: outcome.reason }, 'readiness verification failed');
      return started.length;
    },
    wake() {
      if (closed || !settings.verify || wakeTimer !== null) return;
      wakeTimer = deps.clock.setTimeout(() => {
        wakeTimer = null;
        // Returned so that a ManualClock's advance() waits for the pass.
        return verifier.verifyDue(deps.clock.now()).then(
          () => undefined,
          (error: unknown) => deps.logger?.error({ err: error }, 'readiness pass failed'),
        );
      }, 0);
      wakeTimer.unref();
    },
    async close() {
      closed = true;
      if (wakeTimer !== null) deps.clock.clearTimeout(wakeTimer);
      wakeTimer = null;
      await Promise.allSettled([...inFlight.values()]);
    },
  };
  return verifier;
}

/** One attempt: the SSH handshake at the renter's endpoint, the host key compared, and a model job's engine listed. */
async function probe(deps: JobDeps, job: JobRecord, access: JobAccessReport): Promise<ReadinessAttempt> {
  const endpoint = accessEndpointOf(access, deps.settings.accessHost);
  try {
    const key = await deps.readinessProbes.ssh.hostKeyAt(endpoint);
    const mismatch = checkHostKey(endpoint, access.sshHostKeyFingerprint, key.fingerprint);
    if (mismatch !== null) return { ok: false, reason: mismatch };
    let models: string[] | null = null;
    if (job.template?.kind === 'model') {
      models = await deps.readinessProbes.engine.modelsOf({ id: job.id, machineId: job.machineId, fence: job.fence });
      const empty = checkModels(models);
      if (empty !== null) return { ok: false, reason: empty };
    }
    return {
      ok: true,
      evidence: {
        endpoint,
        sshHostKeyFingerprint: key.fingerprint,
        verifiedAt: key.seenAt,
        models: models === null ? null : models.slice(0, MAX_MODELS_RECORDED),
      },
    };
  } catch (error) {
    if (error instanceof ReadinessProbeError) return { ok: false, reason: error.message };
    throw error;
  }
}

/** STARTING -> RUNNING: the meter starts at the moment the host key was verified; the machine's problem is cleared. */
async function verified(held: HeldJob, agentEvidenceJson: string, result: Extract<ReadinessAttempt, { ok: true }>, now: Date) {
  const { evidence } = result;
  // Never before the reservation, never after now (the probe's reading is on the same clock; this only guards it).
  const startedAt = new Date(Math.min(Math.max(evidence.verifiedAt.getTime(), held.job.createdAt.getTime()), now.getTime()));
  await startMeter(
    held,
    {
      startedAt,
      access: held.job.access as NonNullable<JobRecord['access']>,
      agentEvidence: fromJson<Record<string, unknown>>(agentEvidenceJson) ?? {},
      message: READINESS_MESSAGES.running,
      data: {
        verification: {
          endpoint: endpointText(evidence.endpoint),
          host: evidence.endpoint.host,
          port: evidence.endpoint.port,
          ssh_host_key_fingerprint: evidence.sshHostKeyFingerprint,
          verified_at: iso(startedAt),
          ...(evidence.models === null ? {} : { models: evidence.models }),
        },
      },
    },
    now,
  );
  await setMachineReadinessProblem(held.trx, held.job.machineId, null);
}

/** A failed attempt: retry with a doubling wait, or past the start timeout fail the job. */
async function notVerified(deps: JobDeps, held: HeldJob, row: JobReadinessRow, reason: string, now: Date): Promise<void> {
  const decision = afterFailedAttempt({
    attemptsBefore: row.attempts,
    now,
    deadline: readinessDeadlineOf(held.job.createdAt, deps.settings.startTimeoutMs),
    retryMaxMs: deps.settings.readiness.retryMaxMs,
  });
  if (decision.outcome === 'give_up') return failUnverified(held, reason, now);
  await deferReadiness(held.trx, held.job.id, { attempts: decision.attempts, nextAttemptAt: decision.nextAttemptAt, lastError: reason });
  // One event when the first attempt fails, not one per retry (the job's events are bounded).
  if (row.attempts === 0n) {
    await held.events(
      [
        {
          kind: 'readiness_retrying',
          message: READINESS_MESSAGES.retrying(reason),
          data: { reason, next_attempt_at: iso(decision.nextAttemptAt) },
        },
      ],
      now,
    );
  }
}

/**
 * STARTING -> FAILED (readiness_unverified): the hold goes back whole (the meter never started, nothing was charged),
 * the agent cleans up, and the host sees why: a job event and a problem on the machine.
 */
export async function failUnverified(held: HeldJob, reason: string, now: Date): Promise<void> {
  await held.events([{ kind: 'readiness_failed', message: READINESS_MESSAGES.failed(reason), data: { reason } }], now);
  await held.fail('readiness_unverified', now, { detail: reason });
  await setMachineReadinessProblem(held.trx, held.job.machineId, READINESS_MESSAGES.machineProblem(held.job.id, reason));
}

/** The reason recorded for a job whose verification never got an attempt in (the start timeout sweep). */
export async function lastReadinessError(held: HeldJob): Promise<string | null> {
  const row = await readinessOf(held.trx, held.job.id);
  if (row === undefined) return null;
  return row.last_error ?? 'no verification attempt completed';
}
