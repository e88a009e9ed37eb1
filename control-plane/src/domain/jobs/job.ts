import type { JobState, TemplateKind } from '@ark/shared';
import { fundedThrough, type RateSnapshot } from '../metering/charges.js';
import type { CloseReason } from './states.js';

// A job as the domain sees it, and how it is reached (its wire views, contract part 2 "Job" and "Job access", are in
// views/jobs.ts).

/** What the agent reported with readiness: how renters reach the job. */
export interface JobAccessReport {
  sshPort: number;
  sshHostKeyFingerprint: string;
  /** The agent's own idea of its public address, when it has one. */
  publicHost: string | null;
  ports: Array<{ containerPort: number; hostPort: number; protocol: string }>;
}

export interface JobRecord {
  id: string;
  accountId: string;
  machineId: string;
  hostAccountId: string;
  quoteId: string;
  state: JobState;
  fence: bigint;
  jobVersion: bigint;
  budgetVersion: bigint;
  rate: RateSnapshot;
  fundedBudgetMicro: bigint;
  durationLimitS: bigint;
  hostCeilingAt: Date;
  gpuCount: number;
  gpuModel: string | null;
  gpuPciAddresses: string[];
  imageDigest: string;
  template: { id: string; name: string; kind: TemplateKind } | null;
  acceptedRuntimeMs: bigint;
  cumulativeChargeMicro: bigint;
  chargedHostMicro: bigint;
  chargedFeeMicro: bigint;
  meterStartedAt: Date | null;
  meterFloorAt: Date | null;
  lastMeterReceiptAt: Date | null;
  meterSeq: bigint;
  meteredUntil: Date | null;
  access: JobAccessReport | null;
  pullProgressPct: number | null;
  stopRequestedAt: Date | null;
  stopReason: string | null;
  closeReason: CloseReason | null;
  stoppedAt: Date | null;
  retrievalUntil: Date | null;
  closedAt: Date | null;
  stateChangedAt: Date;
  eventSeq: bigint;
  createdAt: Date;
  updatedAt: Date;
}

/** One entry of a job's event log: sequenced from 1 per job, message and data sanitized of the job's secrets. */
export interface JobEventRecord {
  seq: number;
  at: string;
  kind: string;
  message: string;
  data: Record<string, unknown>;
}

export function fundingOf(job: Pick<JobRecord, 'rate' | 'fundedBudgetMicro' | 'durationLimitS' | 'hostCeilingAt'>) {
  return { rate: job.rate, fundedBudgetMicro: job.fundedBudgetMicro, durationLimitS: job.durationLimitS, hostCeilingAt: job.hostCeilingAt };
}

const minDate = (a: Date, b: Date): Date => (a.getTime() <= b.getTime() ? a : b);

/**
 * funded_through for the view: from meter_started_at once the meter runs; projected from now while the job waits
 * for readiness; for a job that ended before its meter started, the moment it ended (nothing was funded after).
 */
export function fundedThroughOf(job: JobRecord, now: Date): Date {
  if (job.meterStartedAt !== null) return fundedThrough(fundingOf(job), job.meterStartedAt).at;
  if (job.state === 'RESERVED' || job.state === 'STARTING') return fundedThrough(fundingOf(job), now).at;
  return minDate(job.stopRequestedAt ?? job.closedAt ?? job.stateChangedAt, job.hostCeilingAt);
}

export interface AccessContext {
  /** Where renters reach the machine when the agent reported no address of its own. */
  defaultHost: string;
  /** The engine key of a model-kind job, unsealed; null otherwise. */
  engineApiKey: string | null;
}

/** How a job is reached now: execution while RUNNING, read-only retrieval while STOPPED inside its window. */
export interface JobAccessGrant {
  mode: 'execution' | 'retrieval-read-only';
  /** What the agent reported with readiness: the SSH port, its host key, the template's published ports. */
  access: JobAccessReport;
  /** The agent's own public address, or the default access host. */
  host: string;
  /** Until when: the funded-through time while running, the end of the retrieval window after. */
  expiresAt: Date;
  /** The engine key of a running model-kind job; null otherwise. */
  apiKey: string | null;
}

/**
 * Where a renter reaches the job's SSH server: the agent's reported public address, else the operator's default
 * access host, and the agent's SSH port. The access answer hands out exactly this, and readiness verification
 * (services/jobs/readiness.ts) checks exactly this.
 */
export function accessEndpointOf(access: JobAccessReport, defaultHost: string): { host: string; port: number } {
  return { host: access.publicHost ?? defaultHost, port: access.sshPort };
}

/**
 * Contract part 2, Job access, or null when access is not available (403): execution while RUNNING (ssh and the
 * template's http(s) ports; api_key for model-kind jobs), retrieval-read-only (SFTP on the same SSH port) while
 * STOPPED inside the retrieval window. Nothing before verified readiness. Its wire view is `jobAccessView`
 * (views/jobs.ts).
 */
export function accessGrantOf(job: JobRecord, now: Date, context: AccessContext): JobAccessGrant | null {
  const access = job.access;
  if (access === null) return null;
  const { host } = accessEndpointOf(access, context.defaultHost);
  if (job.state === 'RUNNING') {
    const apiKey = job.template?.kind === 'model' && context.engineApiKey !== null ? context.engineApiKey : null;
    return { mode: 'execution', access, host, expiresAt: fundedThroughOf(job, now), apiKey };
  }
  if (job.state === 'STOPPED' && job.retrievalUntil !== null && now.getTime() < job.retrievalUntil.getTime()) {
    return { mode: 'retrieval-read-only', access, host, expiresAt: job.retrievalUntil, apiKey: null };
  }
  return null;
}
