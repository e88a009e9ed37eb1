import type { Job, JobAccess, JobEndpoint, JobState, TemplateKind } from '@ark/shared';
import { fundedThrough, type RateSnapshot, totalRateOf } from '../metering/charges.js';
import type { CloseReason } from './states.js';

// A job as the domain sees it, and its wire views (contract part 2 "Job" and "Job access").

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

/** Contract part 2, Job, plus job_version, funded_budget_micro, duration_limit_s, close_reason and created_at. */
export function jobView(job: JobRecord, now: Date): Job {
  const view: Job = {
    job_id: job.id,
    state: job.state,
    cumulative_charge_micro: job.cumulativeChargeMicro.toString(),
    funded_through: fundedThroughOf(job, now).toISOString(),
    budget_version: job.budgetVersion.toString(),
    machine_id: job.machineId,
    fence: job.fence.toString(),
    rate_micro_per_hour: totalRateOf(job.rate).toString(),
    accepted_runtime_ms: job.acceptedRuntimeMs.toString(),
    meter_started_at: job.meterStartedAt?.toISOString() ?? null,
    last_meter_receipt_at: job.lastMeterReceiptAt?.toISOString() ?? null,
    stopped_at: job.stoppedAt?.toISOString() ?? null,
    tier: job.template?.kind === 'model' ? 'inference' : 'container',
    job_version: job.jobVersion.toString(),
    funded_budget_micro: job.fundedBudgetMicro.toString(),
    duration_limit_s: Number(job.durationLimitS),
    close_reason: job.closeReason,
    created_at: job.createdAt.toISOString(),
  };
  // Absent together when the machine reported no GPU model.
  if (job.gpuModel !== null && job.gpuCount > 0 && job.gpuPciAddresses.length > 0) {
    view.gpu_model = job.gpuModel;
    view.gpu_count = job.gpuCount;
  }
  if (job.template !== null) view.template = { template_id: job.template.id, name: job.template.name, kind: job.template.kind };
  return view;
}

export interface AccessContext {
  /** Where renters reach the machine when the agent reported no address of its own. */
  defaultHost: string;
  /** The engine key of a model-kind job, unsealed; null otherwise. */
  engineApiKey: string | null;
}

/**
 * Contract part 2, Job access, or null when access is not available (403): execution while RUNNING (ssh and the
 * template's http(s) ports; api_key for model-kind jobs), retrieval-read-only (SFTP on the same SSH port) while
 * STOPPED inside the retrieval window. Nothing before verified readiness.
 */
export function accessView(job: JobRecord, now: Date, context: AccessContext): JobAccess | null {
  const access = job.access;
  if (access === null) return null;
  const host = access.publicHost ?? context.defaultHost;
  const target = host.includes(':') ? `[${host}]` : host;
  if (job.state === 'RUNNING') {
    const endpoints: JobEndpoint[] = [{ endpoint_id: 'ssh', kind: 'ssh', external_host: host, external_port: access.sshPort }];
    for (const port of access.ports) {
      if (port.protocol !== 'http' && port.protocol !== 'https') continue;
      if (port.hostPort < 1 || port.hostPort > 65535) continue;
      endpoints.push({
        endpoint_id: `${port.protocol}-${port.containerPort}`,
        kind: port.protocol,
        external_host: host,
        external_port: port.hostPort,
      });
    }
    const view: JobAccess = {
      mode: 'execution',
      endpoints,
      ssh_host_key_fingerprint: access.sshHostKeyFingerprint,
      ssh_command: `ssh -p ${access.sshPort} root@${target}`,
      expires_at: fundedThroughOf(job, now).toISOString(),
    };
    if (job.template?.kind === 'model' && context.engineApiKey !== null) view.api_key = context.engineApiKey;
    return view;
  }
  if (job.state === 'STOPPED' && job.retrievalUntil !== null && now.getTime() < job.retrievalUntil.getTime()) {
    return {
      mode: 'retrieval-read-only',
      endpoints: [{ endpoint_id: 'sftp-retrieval', kind: 'sftp-retrieval', external_host: host, external_port: access.sshPort }],
      ssh_host_key_fingerprint: access.sshHostKeyFingerprint,
      ssh_command: `sftp -P ${access.sshPort} root@${target}`,
      expires_at: job.retrievalUntil.toISOString(),
    };
  }
  return null;
}
