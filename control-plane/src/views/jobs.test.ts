import { describe, expect, it } from 'vitest';
import { accessGrantOf, type JobRecord } from '../domain/jobs/job.js';
import { at, jobRecord, T0 } from '../domain/jobs/testing/job-record.js';
import type { QuoteRecord } from '../domain/quotes/quote.js';
import { jobAccessView, jobView, quoteView } from './jobs.js';

// The domain's RUNNING job, with execution access (an SSH port and one HTTPS endpoint).
const job = (overrides: Partial<JobRecord> = {}): JobRecord =>
  jobRecord({
    access: {
      sshPort: 2222,
      sshHostKeyFingerprint: 'SHA256:x',
      publicHost: null,
      ports: [{ containerPort: 443, hostPort: 30443, protocol: 'https' }],
    },
    ...overrides,
  });

const d = (s: string) => new Date(`2026-01-01T${s}Z`);

describe('job views', () => {
  it('shows gpu_model and gpu_count together, or neither', () => {
    expect(jobView(job(), T0)).toMatchObject({ gpu_model: 'GPU', gpu_count: 1, rate_micro_per_hour: '1100000' });
    const none = jobView(job({ gpuModel: null, gpuPciAddresses: [] }), T0);
    expect(none.gpu_model).toBeUndefined();
    expect(none.gpu_count).toBeUndefined();
  });

  it('access: brackets an IPv6 host in the command, lists https ports, never an api_key for non-model jobs', () => {
    const grant = accessGrantOf(job(), T0, { defaultHost: '::1', engineApiKey: 'k'.repeat(43) });
    const view = jobAccessView(grant!);
    expect(view.ssh_command).toBe('ssh -p 2222 root@[::1]');
    expect(view.endpoints).toEqual([
      { endpoint_id: 'ssh', kind: 'ssh', external_host: '::1', external_port: 2222 },
      { endpoint_id: 'https-443', kind: 'https', external_host: '::1', external_port: 30443 },
    ]);
    expect(view.api_key).toBeUndefined();
    const retrieval = jobAccessView(
      accessGrantOf(job({ state: 'STOPPED', retrievalUntil: at(10) }), at(9), { defaultHost: 'h', engineApiKey: null })!,
    );
    expect(retrieval).toMatchObject({ mode: 'retrieval-read-only', ssh_command: 'sftp -P 2222 root@h', expires_at: at(10).toISOString() });
  });

  it('answers the contract Quote: exactly these fields', () => {
    const q: QuoteRecord = {
      id: '00000000-0000-4000-8000-000000000001',
      accountId: 'acc',
      machineId: '00000000-0000-4000-8000-000000000002',
      offerId: 'o',
      offerVersion: 1n,
      gpuCount: 1,
      machineRateMicroPerHour: 500_000n,
      platformFeeBps: 1000n,
      budgetMicro: 550_000n,
      durationLimitS: 3600n,
      estimatedTotalMicro: 550_000n,
      manifestHash: `sha256:${'0'.repeat(64)}`,
      imageDigest: `r/x@sha256:${'1'.repeat(64)}`,
      templateId: null,
      termsVersion: '2026-11',
      includedDiskGib: 0,
      includedEgressGib: 0,
      hostCeilingAt: d('12:00:00'),
      createdAt: d('00:00:00'),
      expiresAt: d('00:01:00'),
      usedAt: null,
      jobId: null,
    };
    expect(Object.keys(quoteView(q)).sort()).toEqual(
      [
        'quote_id',
        'expires_at',
        'machine_id',
        'gpu_count',
        'machine_rate_micro_per_hour',
        'platform_fee_bps',
        'budget_micro',
        'duration_limit_s',
        'manifest_hash',
        'image_digest',
        'terms_version',
        'meter_start',
        'included_disk_gib',
        'included_egress_gib',
        'estimated_total_micro',
      ].sort(),
    );
  });
});
