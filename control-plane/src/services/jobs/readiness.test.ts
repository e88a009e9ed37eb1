// Verified readiness (issue 24 item 1) through the app, on each store, with the probes faked (the real ssh2 probe has
// its own test, readiness/ssh-host-key-probe.test.ts; the e2e suites run both on real agents): a reported readiness
// waits in STARTING until the control plane verified the endpoint; the meter starts at that verification; a wrong
// host key or an unreachable endpoint is retried and, past the start timeout, fails the job with the hold back and
// the host told; an attempt is made once across claimants, and a claim that ran out is taken again.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../clock.js';
import { claimReadiness, readinessOf } from '../../store/job-readiness.js';
import { verifyLedger } from '../../store/ledger.js';
import { bearer, createTestApp, type SeededAccount, seedAccount, type TestApp } from '../../testing/app.js';
import { type FakeReadinessProbes, fakeReadinessProbes, TEST_HOST_KEY_FINGERPRINT } from '../../testing/readiness.js';
import { agentHeartbeat, fund, getJob, jobStatus, type LiveMachine, liveMachine, readyAccess, reserveJob } from '../../testing/renting.js';
import { DIALECTS } from '../../testing/stores.js';

type Json = Record<string, any>;
const START_TIMEOUT_MS = 60_000;

describe.each(DIALECTS)('verified readiness on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  let probes: FakeReadinessProbes;

  beforeAll(async () => {
    const clockHolder: { now(): Date } = { now: () => new Date() };
    probes = fakeReadinessProbes(clockHolder);
    t = await createTestApp(dialect, {
      configOverrides: { newHostMachineCap: 1000, jobStartTimeoutMs: START_TIMEOUT_MS, jobAccessHost: 'rigs.example.test' },
      readinessProbes: probes,
    });
    clockHolder.now = () => t.clock.now();
  });
  afterAll(async () => {
    await t.destroy();
  });
  afterEach(async () => {
    expect((await verifyLedger(t.store)).ok).toBe(true);
  });

  const fresh = async (): Promise<{ renter: SeededAccount; machine: LiveMachine; jobId: string }> => {
    const renter = await seedAccount(t.ctx);
    await fund(t.ctx, renter.accountId, 10_000_000n);
    const machine = await liveMachine(t.ctx, t.app);
    const { jobId } = await reserveJob(t.app, renter, machine, { budget_micro: '550000' });
    return { renter, machine, jobId };
  };
  /** The agent's report, applied as the gateway does, without the test helper's immediate verification pass. */
  const reportReady = async (machineId: string, jobId: string, port: number) => {
    for (const msg of [
      jobStatus(jobId, 1, 'accepted', t.clock.now()),
      jobStatus(jobId, 1, 'ready', t.clock.now(), { access: readyAccess(port), evidence: { container_running: true } }),
    ])
      await t.ctx.store.db.transaction().execute((trx) => t.ctx.channel.apply(trx, machineId, msg, t.clock.now()));
  };
  const verify = () => t.ctx.services.jobs.readiness.verifyDue(t.clock.now());
  const events = async (renter: SeededAccount, jobId: string): Promise<Json[]> =>
    (await t.app.inject({ method: 'GET', url: `/api/v1/jobs/${jobId}/events?limit=100`, headers: bearer(renter.apiKey) })).json().items;
  const balance = async (renter: SeededAccount) =>
    (await t.app.inject({ method: 'GET', url: '/api/v1/billing/balance', headers: bearer(renter.apiKey) })).json();
  const machineView = async (machine: LiveMachine) =>
    (
      await t.app.inject({ method: 'GET', url: `/api/v1/hosts/machines/${machine.machineId}`, headers: bearer(machine.host.apiKey) })
    ).json();

  it('waits in STARTING until the endpoint is verified; the meter starts at the verification, with its evidence', async () => {
    const { renter, machine, jobId } = await fresh();
    await reportReady(machine.machineId, jobId, 24001);
    const reportedAt = t.clock.now();
    // The agent's word alone: still STARTING, no meter, no access.
    expect(await getJob(t.app, renter, jobId)).toMatchObject({ state: 'STARTING', meter_started_at: null });
    expect((await t.app.inject({ method: 'GET', url: `/api/v1/jobs/${jobId}/access`, headers: bearer(renter.apiKey) })).statusCode).toBe(
      403,
    );
    await t.clock.advance(1500);
    expect(await verify()).toBe(1);
    const running = await getJob(t.app, renter, jobId);
    expect(running).toMatchObject({ state: 'RUNNING', meter_started_at: t.clock.now().toISOString() });
    expect(Date.parse(running.meter_started_at)).toBe(reportedAt.getTime() + 1500);
    // The endpoint checked is the one the access answer hands out: the operator's access host (no public_host reported).
    expect(probes.sshCalls.at(-1)).toBe('rigs.example.test:24001');
    const access = (await t.app.inject({ method: 'GET', url: `/api/v1/jobs/${jobId}/access`, headers: bearer(renter.apiKey) })).json();
    expect(access.endpoints[0]).toMatchObject({ external_host: 'rigs.example.test', external_port: 24001 });
    const all = await events(renter, jobId);
    expect(all.find((e) => e.kind === 'readiness_reported')?.data.reported_at).toBe(reportedAt.toISOString());
    expect(all.find((e) => e.kind === 'state_changed' && e.data.to === 'RUNNING')?.data).toMatchObject({
      from: 'STARTING',
      meter_started_at: running.meter_started_at,
      evidence: { container_running: true },
      verification: {
        endpoint: 'rigs.example.test:24001',
        ssh_host_key_fingerprint: TEST_HOST_KEY_FINGERPRINT,
        verified_at: running.meter_started_at,
      },
    });
    // The work item is gone: nothing is verified twice.
    expect(await readinessOf(t.store.db, jobId)).toBeUndefined();
    expect(await verify()).toBe(0);
  });

  it('retries a wrong host key and an unreachable endpoint, then fails the job at the start timeout: hold back, host told', async () => {
    const { renter, machine, jobId } = await fresh();
    probes.hostKeys.set('rigs.example.test:24002', 'SHA256:someone-else-answers-here');
    await reportReady(machine.machineId, jobId, 24002);
    expect(await verify()).toBe(1);
    expect(await getJob(t.app, renter, jobId)).toMatchObject({ state: 'STARTING', meter_started_at: null });
    const retrying = (await events(renter, jobId)).filter((e) => e.kind === 'readiness_retrying');
    expect(retrying).toHaveLength(1);
    expect(retrying[0]?.data.reason).toContain('SHA256:someone-else-answers-here');
    // Not due again before its backoff.
    expect(await verify()).toBe(0);
    probes.hostKeys.set(
      'rigs.example.test:24002',
      new Error('could not connect to the SSH endpoint rigs.example.test:24002: ECONNREFUSED'),
    );
    let attempts = 0;
    while ((await getJob(t.app, renter, jobId)).state === 'STARTING' && attempts < 200) {
      await t.clock.advance(1000);
      attempts += await verify();
    }
    // Retried with a doubling wait (not every second), one event for the first failure only.
    expect(attempts).toBeGreaterThan(3);
    expect(attempts).toBeLessThan(40);
    const failed = await getJob(t.app, renter, jobId);
    expect(failed).toMatchObject({
      state: 'FAILED',
      close_reason: 'readiness_unverified',
      meter_started_at: null,
      cumulative_charge_micro: '0',
    });
    // Nothing charged, the whole hold back.
    expect(await balance(renter)).toMatchObject({ available_micro: '10000000', held_micro: '0' });
    const all = await events(renter, jobId);
    expect(all.filter((e) => e.kind === 'readiness_retrying')).toHaveLength(1);
    expect(all.find((e) => e.kind === 'readiness_failed')?.data.reason).toContain('ECONNREFUSED');
    expect(all.find((e) => e.kind === 'hold_released')?.data.released_micro).toBe('550000');
    expect(all.some((e) => e.kind === 'state_changed' && e.data.to === 'RUNNING')).toBe(false);
    // The host sees why on the machine, until a later job on it verifies.
    const problems: string[] = (await machineView(machine)).problems;
    expect(problems.some((p) => p.includes(jobId) && p.includes('ECONNREFUSED'))).toBe(true);
    await agentHeartbeat(t.ctx, machine.machineId);
    const { jobId: next } = await reserveJob(t.app, renter, machine, { budget_micro: '550000' });
    await reportReady(machine.machineId, next, 24003);
    await verify();
    expect((await getJob(t.app, renter, next)).state).toBe('RUNNING');
    expect((await machineView(machine)).problems).toEqual([]);
  });

  it('attempts once across claimants, leaves machines held elsewhere, and takes again a claim that ran out', async () => {
    const { renter, machine, jobId } = await fresh();
    await reportReady(machine.machineId, jobId, 24004);
    // Another replica holds the machine's channel: this one leaves the job to it.
    probes.elsewhere.add(machine.machineId);
    expect(await verify()).toBe(0);
    probes.elsewhere.delete(machine.machineId);
    // Another replica claimed it and died mid-attempt: nothing happens until its claim runs out.
    const now = t.clock.now();
    expect(await claimReadiness(t.store.db, jobId, 'a-replica-that-died', now, new Date(now.getTime() + 30_000))).toBe(true);
    expect(await verify()).toBe(0);
    expect((await getJob(t.app, renter, jobId)).state).toBe('STARTING');
    await t.clock.advance(30_000);
    expect(await verify()).toBe(1);
    expect((await getJob(t.app, renter, jobId)).state).toBe('RUNNING');
  });
});
