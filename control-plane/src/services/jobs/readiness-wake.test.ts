// Verified readiness starts when the report commits, not on the worker's next tick (issue 24 item 1): a ready report
// applied the way the gateway applies it (GroupApplier, then its commit hook) is verified within the same turn of
// the clock, with the safety-net worker not running at all; and a report that found every verification slot taken is
// verified as soon as a slot frees, again without a tick. The ManualClock only ever moves by 1 ms here.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../clock.js';
import { GroupApplier } from '../../gateway/applier.js';
import { readinessOf } from '../../store/job-readiness.js';
import { verifyLedger } from '../../store/ledger.js';
import { createTestApp, type SeededAccount, seedAccount, type TestApp, testConfig } from '../../testing/app.js';
import { type FakeReadinessProbes, fakeReadinessProbes } from '../../testing/readiness.js';
import { agentHeartbeat, fund, getJob, jobStatus, type LiveMachine, liveMachine, readyAccess, reserveJob } from '../../testing/renting.js';
import { DIALECTS } from '../../testing/stores.js';

describe.each(DIALECTS)('readiness verification starts at the report on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  let probes: FakeReadinessProbes;
  let applier: GroupApplier;
  const releases: Array<() => void> = [];

  beforeAll(async () => {
    const clockHolder: { now(): Date } = { now: () => new Date() };
    probes = fakeReadinessProbes(clockHolder);
    t = await createTestApp(dialect, {
      // One verification at a time: the second report finds no free slot.
      configOverrides: {
        newHostMachineCap: 1000,
        jobAccessHost: 'rigs.example.test',
        readiness: { ...testConfig().readiness, concurrency: 1 },
      },
      readinessProbes: probes,
    });
    clockHolder.now = () => t.clock.now();
    applier = new GroupApplier({ store: t.store, handlers: t.ctx.channel, clock: t.clock });
  });
  afterAll(async () => {
    // A failed test must not leave a handshake held: close() waits for the attempts in flight.
    for (const release of releases) release();
    await t.ctx.services.jobs.readiness.close();
    expect((await verifyLedger(t.store)).ok).toBe(true);
    await t.destroy();
  });

  const reserved = async (): Promise<{ renter: SeededAccount; machine: LiveMachine; jobId: string }> => {
    const renter = await seedAccount(t.ctx);
    await fund(t.ctx, renter.accountId, 10_000_000n);
    const machine = await liveMachine(t.ctx, t.app);
    await agentHeartbeat(t.ctx, machine.machineId);
    const { jobId } = await reserveJob(t.app, renter, machine, { budget_micro: '550000' });
    return { renter, machine, jobId };
  };
  /** The agent's accepted and ready reports through the gateway's applier, which runs the commit hook. */
  const reportReady = async (machineId: string, jobId: string, port: number) => {
    await applier.apply(machineId, jobStatus(jobId, 1, 'accepted', t.clock.now()));
    await applier.apply(machineId, jobStatus(jobId, 1, 'ready', t.clock.now(), { access: readyAccess(port) }));
  };
  const verifier = () => t.ctx.services.jobs.readiness;
  const state = async (job: { renter: SeededAccount; jobId: string }) => (await getJob(t.app, job.renter, job.jobId)).state;
  /** Real time, a few turns of the event loop: the test waits for work the verifier started on its own. */
  const until = async (condition: () => boolean) => {
    for (let i = 0; i < 500 && !condition(); i += 1) await new Promise((resolve) => setTimeout(resolve, 2));
    expect(condition()).toBe(true);
  };

  it('verifies a committed report on the next turn of the clock, not on the worker tick', async () => {
    const job = await reserved();
    const reportedAt = t.clock.now();
    await reportReady(job.machine.machineId, job.jobId, 25000);
    expect(await state(job)).toBe('STARTING');
    // The wake-up is a 0 ms timer (1 ms on a clock, as Node rounds it); the worker (1 s) does not run in this app.
    await t.clock.advance(1);
    expect(await getJob(t.app, job.renter, job.jobId)).toMatchObject({
      state: 'RUNNING',
      meter_started_at: new Date(reportedAt.getTime() + 1).toISOString(),
    });
    expect(await readinessOf(t.store.db, job.jobId)).toBeUndefined();
  });

  it('verifies a report that found no free slot as soon as the slot frees', async () => {
    const first = await reserved();
    const second = await reserved();
    let release = (): void => {};
    probes.holds.set(
      'rigs.example.test:25001',
      new Promise<void>((resolve) => {
        release = resolve;
        releases.push(resolve);
      }),
    );
    await reportReady(first.machine.machineId, first.jobId, 25001);
    // A pass already under way holds the only slot with the first job's handshake (the rig answers slowly).
    const firstPass = verifier().verifyDue(t.clock.now());
    await until(() => verifier().inFlight === 1 && probes.sshCalls.at(-1) === 'rigs.example.test:25001');
    await reportReady(second.machine.machineId, second.jobId, 25002);
    // The wake-up's pass finds the second report due and no slot for it.
    await t.clock.advance(1);
    expect(probes.sshCalls).not.toContain('rigs.example.test:25002');
    expect(await state(second)).toBe('STARTING');
    // The slot frees: the first attempt's end wakes a pass, and the second is verified on the clock's next turn.
    release();
    expect(await firstPass).toBe(1);
    expect(await state(first)).toBe('RUNNING');
    await t.clock.advance(1);
    expect(probes.sshCalls.at(-1)).toBe('rigs.example.test:25002');
    expect(await state(second)).toBe('RUNNING');
  });
});
