import { describe, expect, it } from 'vitest';
import { accessView, fundedThroughOf, type JobRecord, jobView } from './job.js';
import { at, jobRecord, T0 } from './testing/job-record.js';

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

describe('job views', () => {
  it('funded_through: from the meter start, projected before it, the end for jobs that never ran', () => {
    // 0.55 USDC at 1.1 USDC/h: 30 minutes.
    expect(fundedThroughOf(job(), at(999))).toEqual(at(1_800_000));
    expect(fundedThroughOf(job({ state: 'STARTING', meterStartedAt: null }), at(5000))).toEqual(at(1_805_000));
    expect(fundedThroughOf(job({ state: 'FAILED', meterStartedAt: null, closedAt: at(7000) }), at(99_000))).toEqual(at(7000));
  });

  it('shows gpu_model and gpu_count together, or neither', () => {
    expect(jobView(job(), T0)).toMatchObject({ gpu_model: 'GPU', gpu_count: 1, rate_micro_per_hour: '1100000' });
    const none = jobView(job({ gpuModel: null, gpuPciAddresses: [] }), T0);
    expect(none.gpu_model).toBeUndefined();
    expect(none.gpu_count).toBeUndefined();
  });

  it('access: brackets an IPv6 host in the command, lists https ports, never an api_key for non-model jobs', () => {
    const view = accessView(job(), T0, { defaultHost: '::1', engineApiKey: 'k'.repeat(43) });
    expect(view?.ssh_command).toBe('ssh -p 2222 root@[::1]');
    expect(view?.endpoints).toEqual([
      { endpoint_id: 'ssh', kind: 'ssh', external_host: '::1', external_port: 2222 },
      { endpoint_id: 'https-443', kind: 'https', external_host: '::1', external_port: 30443 },
    ]);
    expect(view?.api_key).toBeUndefined();
    expect(accessView(job({ access: null }), T0, { defaultHost: 'h', engineApiKey: null })).toBeNull();
    expect(accessView(job({ state: 'RECONCILING' }), T0, { defaultHost: 'h', engineApiKey: null })).toBeNull();
    expect(accessView(job({ state: 'STOPPED', retrievalUntil: at(10) }), at(10), { defaultHost: 'h', engineApiKey: null })).toBeNull();
  });
});
