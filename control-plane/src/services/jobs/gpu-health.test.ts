import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../clock.js';
import { ledgerAccounts } from '../../domain/ledger/accounts.js';
import { EMPTY_SAMPLE_GRACE_MS } from '../../domain/jobs/gpu-health.js';
import { chargesFor } from '../../domain/metering/charges.js';
import { balanceOf, verifyLedger } from '../../store/ledger.js';
import { bearer, createTestApp, seedAccount, type TestApp } from '../../testing/app.js';
import {
  deliver,
  fund,
  getJob,
  jobStatus,
  liveMachine,
  meterReceipt,
  queuedCommands,
  reserveJob,
  runJob,
  subscribeWebhooks,
  telemetry,
} from '../../testing/renting.js';
import { DIALECTS } from '../../testing/stores.js';

// A GPU lost per telemetry (issue 24 item 3): telemetry batches go through the gateway's handler table (deliver), the
// way the agent's arrive; a batch missing a RUNNING job's GPU fails it `gpu_lost` and credits the renter once.

const RATE = { machineRateMicroPerHour: 500_000n, platformFeeBps: 1000n };
const ALL_GPUS = ['0000:01:00.0', '0000:02:00.0'];

describe.each(DIALECTS)('a GPU lost per telemetry on %s', (dialect) => {
  let t: TestApp<ManualClock>;

  beforeAll(async () => {
    t = await createTestApp(dialect, { configOverrides: { newHostMachineCap: 1000, jobStartTimeoutMs: 600_000 } });
  });
  afterAll(async () => {
    await t.destroy();
  });
  afterEach(async () => {
    expect(await verifyLedger(t.store)).toMatchObject({ ok: true, discrepancies: [] });
  });

  const at = (start: Date, ms: number) => new Date(start.getTime() + ms);
  const eventsOf = async (apiKey: string, jobId: string) => {
    const res = await t.app.inject({ method: 'GET', url: `/api/v1/jobs/${jobId}/events?limit=100`, headers: bearer(apiKey) });
    return (res.json() as { items: Record<string, any>[] }).items;
  };
  const available = (accountId: string) => balanceOf(t.store.db, ledgerAccounts.available(accountId));
  const pending = (accountId: string) => balanceOf(t.store.db, ledgerAccounts.pending(accountId));

  it('fails the job gpu_lost, stops it on the machine and credits the charges after the last healthy sample, once', async () => {
    const renter = await seedAccount(t.ctx);
    await fund(t.ctx, renter.accountId, 10_000_000n);
    const machine = await liveMachine(t.ctx, t.app);
    for (const account of [renter, machine.host]) await subscribeWebhooks(t.ctx, account.accountId, ['job.credited']);
    const { jobId } = await reserveJob(t.app, renter, machine, { budget_micro: '550000', gpu_count: 1 });
    const row = await t.store.db.selectFrom('jobs').select('gpu_pci_addresses').where('id', '=', jobId).executeTakeFirstOrThrow();
    const assigned = JSON.parse(row.gpu_pci_addresses) as string[];
    expect(assigned).toHaveLength(1);
    // The job's GPU as the agent reports it (lower case, 4-digit domain); the manifest's form may differ.
    const mine = ALL_GPUS.find((pci) => pci.endsWith(assigned[0]?.slice(-7) ?? '?')) as string;
    const other = ALL_GPUS.find((pci) => pci !== mine) as string;
    const start = await runJob(t, machine.machineId, jobId);

    // 10 s in: both GPUs listed. 15 s in: the other GPU (not the job's) is gone, which is no matter to this job: its
    // GPU is listed, so 15 s is its last healthy point.
    await t.clock.advance(15_000);
    await deliver(
      t.ctx,
      machine.machineId,
      telemetry([
        { at: at(start, 10_000), gpus: ALL_GPUS },
        { at: at(start, 15_000), gpus: [mine] },
      ]),
    );
    expect((await getJob(t.app, renter, jobId)).state).toBe('RUNNING');
    await t.clock.advance(15_000);
    await deliver(t.ctx, machine.machineId, meterReceipt(jobId, 1, 1, start, at(start, 30_000)));
    const pendingBefore = await pending(machine.host.accountId);
    const renterBefore = await available(renter.accountId);

    // 31 s in: the job's GPU is gone from the batch (nvidia-smi no longer lists it).
    await t.clock.advance(2000);
    const lost = telemetry([{ at: at(start, 31_000), gpus: [other] }]);
    await deliver(t.ctx, machine.machineId, lost);
    const failed = await getJob(t.app, renter, jobId);
    expect(failed).toMatchObject({ state: 'FAILED', close_reason: 'gpu_lost', cumulative_charge_micro: '4583' });
    // The credit: what was charged after 15 s (the last sample listing the job's GPU), 15 of the 30 metered seconds.
    const all = chargesFor(RATE, 550_000n, 30_000n);
    const healthy = chargesFor(RATE, 550_000n, 15_000n);
    const creditHost = all.hostMicro - healthy.hostMicro;
    const creditTotal = all.cumulativeMicro - healthy.cumulativeMicro;
    expect(creditTotal).toBeGreaterThan(0n);
    expect(creditHost).toBeGreaterThan(0n);
    const holdBack = 550_000n - 4583n;
    expect(await available(renter.accountId)).toBe(renterBefore + holdBack + creditTotal);
    expect(await pending(machine.host.accountId)).toBe(pendingBefore - creditHost);
    const events = await eventsOf(renter.apiKey, jobId);
    const toFailed = events.find((e) => e.kind === 'state_changed' && e.data.to === 'FAILED');
    expect(toFailed?.data).toMatchObject({ reason: 'gpu_lost', missing_gpus: assigned, lost_at: at(start, 31_000).toISOString() });
    const credited = events.filter((e) => e.kind === 'job_credited');
    expect(credited).toHaveLength(1);
    expect(credited[0]?.data).toMatchObject({
      reason: 'gpu_lost',
      credit_micro: creditTotal.toString(),
      runtime_ms: '15000',
      healthy_at: at(start, 15_000).toISOString(),
      from_host_pending_micro: creditHost.toString(),
      from_host_payable_micro: '0',
    });
    const hooks = await t.store.db
      .selectFrom('webhook_events')
      .select(['account_id', 'payload'])
      .where('type', '=', 'job.credited')
      .execute();
    const ours = hooks.filter((h) => JSON.parse(h.payload).data.job_id === jobId);
    expect(ours.map((h) => h.account_id).sort()).toEqual([renter.accountId, machine.host.accountId].sort());
    // Both parties' histories.
    const line = { job_id: jobId, reason: 'gpu_lost', credit_micro: creditTotal.toString(), from_host_micro: creditHost.toString() };
    const renterView = await t.app.inject({ method: 'GET', url: '/api/v1/billing/balance', headers: bearer(renter.apiKey) });
    expect(renterView.json().credits).toContainEqual(expect.objectContaining(line));
    const hostView = await t.app.inject({ method: 'GET', url: '/api/v1/hosts/earnings', headers: bearer(machine.host.apiKey) });
    expect(hostView.json().credits).toContainEqual(expect.objectContaining(line));
    // The agent is told to stop and remove the container (clean_job, as for every failed job).
    expect((await queuedCommands(t.ctx, machine.machineId)).map((c) => c.kind)).toEqual(['launch_job', 'clean_job']);

    // The same batch again, a later one still missing the GPU, and a late receipt: nothing more moves.
    const money = [await available(renter.accountId), await pending(machine.host.accountId)];
    await deliver(t.ctx, machine.machineId, lost);
    await t.clock.advance(10_000);
    await deliver(t.ctx, machine.machineId, telemetry([{ at: at(start, 41_000), gpus: [other] }]));
    await deliver(t.ctx, machine.machineId, meterReceipt(jobId, 1, 2, at(start, 30_000), at(start, 40_000)));
    expect(await getJob(t.app, renter, jobId)).toMatchObject({ state: 'FAILED', cumulative_charge_micro: '4583' });
    expect([await available(renter.accountId), await pending(machine.host.accountId)]).toEqual(money);
    expect((await eventsOf(renter.apiKey, jobId)).filter((e) => e.kind === 'job_credited')).toHaveLength(1);
    const credits = await t.store.db.selectFrom('job_credits').select('job_id').where('job_id', '=', jobId).execute();
    expect(credits).toHaveLength(1);
  });

  it("checks a group of machines' batches in one transaction as one at a time: only the running job whose GPU is gone fails", async () => {
    const renter = await seedAccount(t.ctx);
    await fund(t.ctx, renter.accountId, 10_000_000n);
    // Two machines with a RUNNING job each, and one idle machine: the group's filter must find exactly the two.
    const [lostOn, fineOn, idle] = [await liveMachine(t.ctx, t.app), await liveMachine(t.ctx, t.app), await liveMachine(t.ctx, t.app)];
    const jobs: string[] = [];
    let start = t.clock.now();
    for (const machine of [lostOn, fineOn]) {
      const { jobId } = await reserveJob(t.app, renter, machine, { budget_micro: '550000', gpu_count: 2 });
      start = await runJob(t, machine.machineId, jobId);
      jobs.push(jobId);
    }
    const [lostJob, fineJob] = jobs as [string, string];
    await t.clock.advance(10_000);
    const batches = [
      { machineId: lostOn.machineId, msg: telemetry([{ at: at(start, 10_000), gpus: [ALL_GPUS[0] as string] }]) },
      { machineId: fineOn.machineId, msg: telemetry([{ at: at(start, 10_000), gpus: ALL_GPUS }]) },
      { machineId: idle.machineId, msg: telemetry([{ at: at(start, 10_000), gpus: [] }]) },
    ];
    await t.store.db.transaction().execute((trx) => t.ctx.channel.applyAll(trx, batches, t.clock.now()));
    expect(await getJob(t.app, renter, lostJob)).toMatchObject({ state: 'FAILED', close_reason: 'gpu_lost' });
    expect((await getJob(t.app, renter, fineJob)).state).toBe('RUNNING');
    // The job whose GPUs were all listed moved its last healthy point to the sample.
    const healthy = await t.store.db.selectFrom('job_gpu_health').select('healthy_at').where('job_id', '=', fineJob).execute();
    expect(healthy.map((row) => row.healthy_at)).toEqual([at(start, 10_000).toISOString()]);
  });

  it('credits everything charged when no telemetry listed the GPUs while the job ran (a collector that lists none)', async () => {
    const renter = await seedAccount(t.ctx);
    await fund(t.ctx, renter.accountId, 10_000_000n);
    const machine = await liveMachine(t.ctx, t.app);
    const { jobId } = await reserveJob(t.app, renter, machine, { budget_micro: '550000', gpu_count: 2 });
    const start = await runJob(t, machine.machineId, jobId);
    // A sample from before the meter started says nothing of the running job.
    await t.clock.advance(20_000);
    await deliver(t.ctx, machine.machineId, meterReceipt(jobId, 1, 1, start, at(start, 20_000)));
    const pendingBefore = await pending(machine.host.accountId);
    // A wedged driver: nvidia-smi answers nothing, the collector reports no GPUs.
    await deliver(t.ctx, machine.machineId, telemetry([{ at: at(start, -5000), gpus: [] }]));
    expect((await getJob(t.app, renter, jobId)).state).toBe('RUNNING');
    // One empty sample is a hiccup (an nvidia-smi run that timed out): the job runs on.
    await deliver(t.ctx, machine.machineId, telemetry([{ at: at(start, 20_000), gpus: [] }]));
    expect((await getJob(t.app, renter, jobId)).state).toBe('RUNNING');
    // Nothing listed for the grace period after the meter's start: the GPUs are gone.
    await t.clock.advance(EMPTY_SAMPLE_GRACE_MS);
    await deliver(t.ctx, machine.machineId, telemetry([{ at: at(start, EMPTY_SAMPLE_GRACE_MS), gpus: [] }]));
    expect(await getJob(t.app, renter, jobId)).toMatchObject({ state: 'FAILED', close_reason: 'gpu_lost' });
    const charged = chargesFor(RATE, 550_000n, 20_000n);
    expect(await available(renter.accountId)).toBe(10_000_000n);
    expect(await pending(machine.host.accountId)).toBe(pendingBefore - charged.hostMicro);
    const credited = (await eventsOf(renter.apiKey, jobId)).filter((e) => e.kind === 'job_credited');
    expect(credited.map((e) => e.data)).toEqual([expect.objectContaining({ reason: 'gpu_lost', healthy_at: null, runtime_ms: '20000' })]);
  });

  it('a failed start-time self-test ends the job before RUNNING: launch_failed, nothing charged, so no credit', async () => {
    const renter = await seedAccount(t.ctx);
    await fund(t.ctx, renter.accountId, 10_000_000n);
    const machine = await liveMachine(t.ctx, t.app);
    const { jobId } = await reserveJob(t.app, renter, machine, { budget_micro: '550000', gpu_count: 1 });
    await deliver(t.ctx, machine.machineId, jobStatus(jobId, 1, 'accepted', t.clock.now()));
    // What the agent sends when its job-start GPU identity check fails (host-agent jobs/job-launch.ts): no container.
    const detail = 'GPU identity check failed: assigned GPU 0000:01:00.0 not found by nvidia-smi (it lists none)';
    await deliver(t.ctx, machine.machineId, jobStatus(jobId, 1, 'failed', t.clock.now(), { detail }));
    expect(await getJob(t.app, renter, jobId)).toMatchObject({
      state: 'FAILED',
      close_reason: 'launch_failed',
      meter_started_at: null,
      cumulative_charge_micro: '0',
    });
    expect(await available(renter.accountId)).toBe(10_000_000n);
    expect(await t.store.db.selectFrom('job_credits').select('job_id').where('job_id', '=', jobId).execute()).toEqual([]);
    expect((await eventsOf(renter.apiKey, jobId)).filter((e) => e.kind === 'job_credited')).toEqual([]);
  });
});
