import type { BudgetExtensionResult, Job, JobAccess, JobCreated, JobEndpoint, JobEvent, JobStopResult, Quote } from '@ark/shared';
import { fundedThroughOf, type JobAccessGrant, type JobEventRecord, type JobRecord } from '../domain/jobs/job.js';
import type { StopAnswerState } from '../domain/jobs/states.js';
import { totalRateOf } from '../domain/metering/charges.js';
import type { QuoteRecord } from '../domain/quotes/quote.js';
import type { BudgetExtended, Reservation } from '../services/jobs/index.js';

// Renting as the wire shows it (shared/src/http/jobs.ts, quotes.ts): quotes, jobs, how a job is reached, its
// events; the routes and `ark-cp jobs show` alike.

/** Contract part 2, Quote: exactly these fields. */
export function quoteView(q: QuoteRecord): Quote {
  return {
    quote_id: q.id,
    expires_at: q.expiresAt.toISOString(),
    machine_id: q.machineId,
    gpu_count: q.gpuCount,
    machine_rate_micro_per_hour: q.machineRateMicroPerHour.toString(),
    platform_fee_bps: Number(q.platformFeeBps),
    budget_micro: q.budgetMicro.toString(),
    duration_limit_s: Number(q.durationLimitS),
    manifest_hash: q.manifestHash,
    image_digest: q.imageDigest,
    terms_version: q.termsVersion,
    meter_start: 'verified_ready',
    included_disk_gib: q.includedDiskGib,
    included_egress_gib: q.includedEgressGib,
    ...(q.templateId !== null ? { template_id: q.templateId } : {}),
    estimated_total_micro: q.estimatedTotalMicro.toString(),
  };
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

/**
 * `ark-cp jobs show`: the renter's view of the job, whose it is on both sides, and where its meter stands (the end of
 * the last accepted period: an automatic credit gives back what was charged after the machine's last heartbeat).
 */
export const operatorJobView = (job: JobRecord, now: Date) => ({
  ...jobView(job, now),
  renter_account_id: job.accountId,
  host_account_id: job.hostAccountId,
  metered_until: job.meteredUntil?.toISOString() ?? null,
});

/**
 * Contract part 2, Job access: execution (ssh and the template's http(s) ports; api_key for model-kind jobs) or
 * retrieval-read-only (SFTP on the same SSH port). Which one, and until when, is the domain's `accessGrantOf`.
 */
export function jobAccessView(grant: JobAccessGrant): JobAccess {
  const { access, host } = grant;
  const target = host.includes(':') ? `[${host}]` : host;
  if (grant.mode === 'execution') {
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
      expires_at: grant.expiresAt.toISOString(),
    };
    if (grant.apiKey !== null) view.api_key = grant.apiKey;
    return view;
  }
  return {
    mode: 'retrieval-read-only',
    endpoints: [{ endpoint_id: 'sftp-retrieval', kind: 'sftp-retrieval', external_host: host, external_port: access.sshPort }],
    ssh_host_key_fingerprint: access.sshHostKeyFingerprint,
    ssh_command: `sftp -P ${access.sshPort} root@${target}`,
    expires_at: grant.expiresAt.toISOString(),
  };
}

export const jobEventView = (e: JobEventRecord): JobEvent => ({ seq: e.seq, at: e.at, kind: e.kind, message: e.message, data: e.data });

/** A reservation taken: the job, RESERVED. */
export const jobCreatedView = (reserved: Reservation): JobCreated => ({ job_id: reserved.jobId, state: 'RESERVED' as const });

export const jobStopView = (jobId: string, state: StopAnswerState): JobStopResult => ({ job_id: jobId, state });

export const budgetExtensionView = (jobId: string, extended: BudgetExtended): BudgetExtensionResult => ({
  job_id: jobId,
  budget_version: extended.budgetVersion.toString(),
  funded_budget_micro: extended.fundedBudgetMicro.toString(),
});
