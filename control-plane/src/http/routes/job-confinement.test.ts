import { randomUUID } from 'node:crypto';
import type { JobEventMessage, LaunchJobBody } from '@ark/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../clock.js';
import { bearer, createTestApp, type SeededAccount, seedAccount, type TestApp } from '../../testing/app.js';
import { sampleManifest } from '../../testing/hosting.js';
import { deliver, fund, type LiveMachine, liveMachine, queuedCommands, reserveJob, runJob } from '../../testing/renting.js';
import { DIALECTS } from '../../testing/stores.js';

// Confinement as the control plane sees it (issue 24 item 5): the machine's job limits on its offer, the limits and
// the offer's included quotas in launch_job (only to an agent that announced limits), and the agent's job events.

type Json = Record<string, any>;
const GIB = 1024 ** 3;
const JOB_LIMITS = { nano_cpus: 15_000_000_000, memory_bytes: String(126 * GIB), pids: 4096 };

let nextId = 1_000_000;
function jobEvent(
  jobId: string,
  fence: number,
  kind: JobEventMessage['kind'],
  at: Date,
  data: JobEventMessage['data'] = {},
): JobEventMessage {
  return {
    v: 1,
    t: 'job_event',
    sid: 's1',
    seq: 1,
    id: nextId++,
    job_id: jobId,
    fence: String(fence),
    at: at.toISOString(),
    kind,
    message: `the agent says ${kind}`,
    data,
  };
}

describe.each(DIALECTS)('job confinement on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  let renter: SeededAccount;

  beforeAll(async () => {
    t = await createTestApp(dialect, { configOverrides: { newHostMachineCap: 1000 } });
    renter = await seedAccount(t.ctx);
    await fund(t.ctx, renter.accountId, 100_000_000n);
  });
  afterAll(async () => {
    await t.destroy();
  });

  const confinedMachine = () => liveMachine(t.ctx, t.app, { manifest: sampleManifest({ job_limits: JOB_LIMITS }) });
  const offerOf = async (machine: LiveMachine): Promise<Json | undefined> => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/offers?limit=100', headers: bearer(renter.apiKey) });
    expect(res.statusCode, res.body).toBe(200);
    return (res.json().items as Json[]).find((item) => item.machine_id === machine.machineId);
  };
  const commitQuotas = async (machine: LiveMachine, diskGib: number, egressGib: number) => {
    const now = t.clock.now();
    const res = await t.app.inject({
      method: 'POST',
      url: `/api/v1/hosts/machines/${machine.machineId}/offer`,
      headers: { ...bearer(machine.host.apiKey), 'idempotency-key': randomUUID() },
      payload: {
        rate_micro_per_hour: '1000000',
        included_quotas: { included_disk_gib: diskGib, included_egress_gib: egressGib },
        available_from: new Date(now.getTime() - 60_000).toISOString(),
        available_until: new Date(now.getTime() + 24 * 3_600_000).toISOString(),
        expected_version: '1',
      },
    });
    expect(res.statusCode, res.body).toBe(202);
  };
  const launchOf = async (machine: LiveMachine, jobId: string): Promise<LaunchJobBody> => {
    const command = (await queuedCommands(t.ctx, machine.machineId)).find(
      (c) => c.kind === 'launch_job' && (c.body as Json).job_id === jobId,
    );
    return command?.body as LaunchJobBody;
  };
  const eventsOf = async (jobId: string): Promise<Json[]> => {
    const res = await t.app.inject({ method: 'GET', url: `/api/v1/jobs/${jobId}/events?limit=100`, headers: bearer(renter.apiKey) });
    expect(res.statusCode, res.body).toBe(200);
    return res.json().items as Json[];
  };

  it("shows the machine's job limits on its offer, and none for an agent older than confinement", async () => {
    const confined = await confinedMachine();
    expect((await offerOf(confined))?.job_limits).toEqual(JOB_LIMITS);
    const old = await liveMachine(t.ctx, t.app);
    const offer = await offerOf(old);
    expect(offer).toBeDefined();
    expect(offer).not.toHaveProperty('job_limits');
  });

  it("sends the limits and the quote's included quotas in bytes with launch_job, and nothing new to an older agent", async () => {
    const confined = await confinedMachine();
    await commitQuotas(confined, 50, 10);
    const { jobId } = await reserveJob(t.app, renter, confined, { budget_micro: '1000000' });
    expect(await launchOf(confined, jobId)).toMatchObject({
      limits: JOB_LIMITS,
      included_disk_bytes: String(50 * GIB),
      included_egress_bytes: String(10 * GIB),
    });

    // The seeded offer includes 0 of each: no quota is stated, none sent.
    const seeded = await confinedMachine();
    const seededJob = await reserveJob(t.app, renter, seeded, { budget_micro: '1000000' });
    const seededLaunch = await launchOf(seeded, seededJob.jobId);
    expect(seededLaunch.limits).toEqual(JOB_LIMITS);
    expect(seededLaunch).not.toHaveProperty('included_disk_bytes');

    const old = await liveMachine(t.ctx, t.app);
    await commitQuotas(old, 50, 10);
    const oldJob = await reserveJob(t.app, renter, old, { budget_micro: '1000000' });
    const oldLaunch = await launchOf(old, oldJob.jobId);
    for (const field of ['limits', 'included_disk_bytes', 'included_egress_bytes']) expect(oldLaunch).not.toHaveProperty(field);
  });

  it("records the agent's events on the job under its fence, refuses another fence's and ignores another machine's", async () => {
    const machine = await confinedMachine();
    const { jobId } = await reserveJob(t.app, renter, machine, { budget_micro: '1000000' });
    await runJob(t, machine.machineId, jobId);
    const at = t.clock.now();
    await deliver(t.ctx, machine.machineId, jobEvent(jobId, 1, 'pids_limit_reached', at, { pids: 4096, pids_limit: 4096 }));
    await deliver(t.ctx, machine.machineId, jobEvent(jobId, 1, 'egress_quota_exceeded', at, { used_bytes: 11 * GIB }));
    await deliver(t.ctx, machine.machineId, jobEvent(jobId, 7, 'oom_kill', at, { kills: 1 }));
    const other = await confinedMachine();
    await deliver(t.ctx, other.machineId, jobEvent(jobId, 1, 'disk_quota_exceeded', at));

    // The job's own lifecycle (reserved, states, the pull, the readiness report and its verification) is not what is tested here.
    const lifecycle = ['reserved', 'state_changed', 'pull_progress', 'readiness_reported', 'readiness_verified'];
    const events = (await eventsOf(jobId)).filter((event) => !lifecycle.includes(event.kind));
    expect(events.map((event) => [event.kind, event.message, event.data])).toEqual([
      ['pids_limit_reached', 'the agent says pids_limit_reached', { pids: 4096, pids_limit: 4096, agent_at: at.toISOString() }],
      ['egress_quota_exceeded', 'the agent says egress_quota_exceeded', { used_bytes: 11 * GIB, agent_at: at.toISOString() }],
      [
        'event_refused',
        'Agent event "oom_kill" refused: unknown fence 7 (the job is at 1).',
        { event: 'oom_kill', fence: '7', current_fence: '1' },
      ],
    ]);
    // The job itself is untouched: its state comes from its status reports alone.
    const job = await t.app.inject({ method: 'GET', url: `/api/v1/jobs/${jobId}`, headers: bearer(renter.apiKey) });
    expect(job.json().state).toBe('RUNNING');
  });
});
