import { describe, expect, it } from 'vitest';
import { accessGrantOf, fundedThroughOf, type JobRecord } from './job.js';
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

describe('job rules', () => {
  it('funded_through: from the meter start, projected before it, the end for jobs that never ran', () => {
    // 0.55 USDC at 1.1 USDC/h: 30 minutes.
    expect(fundedThroughOf(job(), at(999))).toEqual(at(1_800_000));
    expect(fundedThroughOf(job({ state: 'STARTING', meterStartedAt: null }), at(5000))).toEqual(at(1_805_000));
    expect(fundedThroughOf(job({ state: 'FAILED', meterStartedAt: null, closedAt: at(7000) }), at(99_000))).toEqual(at(7000));
  });

  it('access: execution while RUNNING (the engine key for model jobs only), retrieval inside the window, else none', () => {
    const key = 'k'.repeat(43);
    expect(accessGrantOf(job(), T0, { defaultHost: '::1', engineApiKey: key })).toMatchObject({
      mode: 'execution',
      host: '::1',
      expiresAt: at(1_800_000),
      apiKey: null,
    });
    const model = job({ template: { id: 't', name: 'm', kind: 'model' } });
    expect(accessGrantOf(model, T0, { defaultHost: 'h', engineApiKey: key })?.apiKey).toBe(key);
    expect(accessGrantOf(job({ state: 'STOPPED', retrievalUntil: at(10) }), at(9), { defaultHost: 'h', engineApiKey: key })).toMatchObject({
      mode: 'retrieval-read-only',
      expiresAt: at(10),
      apiKey: null,
    });
    expect(accessGrantOf(job({ access: null }), T0, { defaultHost: 'h', engineApiKey: null })).toBeNull();
    expect(accessGrantOf(job({ state: 'RECONCILING' }), T0, { defaultHost: 'h', engineApiKey: null })).toBeNull();
    expect(accessGrantOf(job({ state: 'STOPPED', retrievalUntil: at(10) }), at(10), { defaultHost: 'h', engineApiKey: null })).toBeNull();
  });
});
