import type {
  BudgetExtensionRequest,
  HeartbeatMessage,
  JobCreateRequest,
  JobEventMessage,
  JobStatusMessage,
  MeterReceiptMessage,
  QuoteRequest,
  TelemetryMessage,
} from '@ark/shared';
import type { StopCaller } from '../../domain/jobs/ending.js';
import type { StopAnswerState } from '../../domain/jobs/states.js';
import type { QuoteRecord } from '../../domain/quotes/quote.js';
import type { SpendCapStanding } from '../../domain/jobs/spend-cap.js';
import type { Tx } from '../../store/db.js';
import type { CommitHook } from '../../store/transaction.js';
import { applyJobEvent } from './agent-event.js';
import { applyJobStatus } from './agent-status.js';
import type { JobDeps, JobSettings } from './deps.js';
import { type BudgetExtended, extendBudget, stopJob } from './funding.js';
import { checkGpusFromTelemetry, checkGpusFromTelemetryGroup } from './gpu-health.js';
import { applyMeterReceipt } from './metering.js';
import { applyMeterReceipts, type ReceiptOfMachine } from './metering-batch.js';
import { createQuote } from './quote.js';
import { type ReadinessVerifier, readinessVerifier } from './readiness.js';
import { type JobReads, jobReads } from './reads.js';
import { reconcileFromHeartbeat } from './reconcile.js';
import { type Reservation, reserve } from './reserve.js';
import { changeSpendCap, readSpendCap, type SpendCapChange, setSpendCapByOperator } from './spend-cap.js';
import { type JobSweeps, jobSweeps } from './sweeps.js';

export { type JobDeps, type JobSettings, jobSettingsOf } from './deps.js';
export type { BudgetExtended } from './funding.js';
export type { JobReads } from './reads.js';
export type { ReadinessVerifier } from './readiness.js';
export { ReadinessProbeError, type EngineModelsProbe, type ReadinessProbes, type SshHostKeyProbe } from './readiness-probes.js';
export type { Reservation } from './reserve.js';
export type { SpendCapChange } from './spend-cap.js';
export { SWEEP_BATCH, type JobSweeps } from './sweeps.js';

/**
 * The renting use cases, one file each: quote, reserve, stop and budget extension (funding), the agent's job
 * status and meter receipts, reconciliation from heartbeats, the sweeps, and the reads. Use cases called by an
 * idempotent route take the route's commit hook last and run it inside their transaction.
 */
export interface JobServices {
  readonly settings: JobSettings;
  createQuote(accountId: string, body: QuoteRequest, commit?: CommitHook<QuoteRecord>): Promise<QuoteRecord>;
  reserve(
    accountId: string,
    body: JobCreateRequest,
    commit?: CommitHook<Reservation>,
    admission?: { acceptanceAuthorization?: string | null },
  ): Promise<Reservation>;
  stop(jobId: string, caller: StopCaller, reasonText: string, commit?: CommitHook<StopAnswerState>): Promise<StopAnswerState>;
  extendBudget(
    jobId: string,
    accountId: string,
    body: BudgetExtensionRequest,
    commit?: CommitHook<BudgetExtended>,
  ): Promise<BudgetExtended>;
  /** The 'job_status' channel handler (inside the gateway's apply-once transaction). */
  applyJobStatus(trx: Tx, machineId: string, msg: JobStatusMessage, now: Date): Promise<void>;
  /** The 'job_event' channel handler (inside the gateway's apply-once transaction). */
  applyJobEvent(trx: Tx, machineId: string, msg: JobEventMessage, now: Date): Promise<void>;
  /** The 'meter_receipt' channel handler (inside the gateway's apply-once transaction). */
  applyMeterReceipt(trx: Tx, machineId: string, msg: MeterReceiptMessage, now: Date): Promise<void>;
  /** The telemetry hook: a RUNNING job whose GPU is gone from the batch fails `gpu_lost`, credited. Answers those. */
  checkGpusFromTelemetry(trx: Tx, machineId: string, msg: TelemetryMessage, now: Date): Promise<string[]>;
  /** The same for the telemetry of several machines in one transaction: one query finds the machines with GPU jobs. */
  checkGpusFromTelemetryGroup(trx: Tx, batches: ReadonlyArray<{ machineId: string; msg: TelemetryMessage }>, now: Date): Promise<string[]>;
  /** The same for a group of receipts in one transaction (the gateway's group commit, services/jobs/metering-batch.ts). */
  applyMeterReceipts(trx: Tx, receipts: readonly ReceiptOfMachine[], now: Date): Promise<void>;
  /** The heartbeat hook: reconciling jobs the agent lists as running come back. Returns how many did. */
  reconcileFromHeartbeat(machineId: string, msg: HeartbeatMessage, now: Date): Promise<number>;
  /** GET /api/v1/account/spend-cap: the cap, the operator's default and what the account's unstopped jobs commit. */
  readSpendCap(accountId: string): Promise<SpendCapStanding>;
  /** PUT /api/v1/account/spend-cap: lowering needs nothing more, raising a fresh step-up (audited either way). */
  changeSpendCap(change: SpendCapChange, commit?: CommitHook<SpendCapStanding>): Promise<SpendCapStanding>;
  /** `ark-cp accounts spend-cap`: the operator sets (or clears, null) an account's own cap, audited with a reason. */
  setSpendCapByOperator(input: { accountId: string; capMicroPerHour: bigint | null; reason: string }): Promise<SpendCapStanding>;
  readonly sweeps: JobSweeps;
  readonly reads: JobReads;
  /** Verified readiness: the jobs the agent reported ready are checked before they run (services/jobs/readiness.ts). */
  readonly readiness: ReadinessVerifier;
}

export function buildJobServices(deps: JobDeps): JobServices {
  return {
    settings: deps.settings,
    createQuote: (accountId, body, commit) => createQuote(deps, accountId, body, commit),
    reserve: (accountId, body, commit, admission) => reserve(deps, accountId, body, commit, admission),
    stop: (jobId, caller, reasonText, commit) => stopJob(deps, jobId, caller, reasonText, commit),
    extendBudget: (jobId, accountId, body, commit) => extendBudget(deps, jobId, accountId, body, commit),
    applyJobStatus: (trx, machineId, msg, now) => applyJobStatus(deps, trx, machineId, msg, now),
    applyJobEvent: (trx, machineId, msg, now) => applyJobEvent(deps, trx, machineId, msg, now),
    applyMeterReceipt: (trx, machineId, msg, now) => applyMeterReceipt(deps, trx, machineId, msg, now),
    checkGpusFromTelemetry: (trx, machineId, msg, now) => checkGpusFromTelemetry(deps, trx, machineId, msg, now),
    checkGpusFromTelemetryGroup: (trx, batches, now) => checkGpusFromTelemetryGroup(deps, trx, batches, now),
    applyMeterReceipts: (trx, receipts, now) => applyMeterReceipts(deps, trx, receipts, now),
    reconcileFromHeartbeat: (machineId, msg, now) => reconcileFromHeartbeat(deps, machineId, msg, now),
    readSpendCap: (accountId) => readSpendCap(deps, accountId),
    changeSpendCap: (change, commit) => changeSpendCap(deps, change, commit),
    setSpendCapByOperator: (input) => setSpendCapByOperator(deps, input),
    sweeps: jobSweeps(deps),
    reads: jobReads(deps),
    readiness: readinessVerifier(deps),
  };
}
