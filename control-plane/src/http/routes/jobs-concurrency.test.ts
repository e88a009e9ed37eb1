import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../clock.js';
import { ledgerAccounts } from '../../domain/ledger/accounts.js';
import { chargesFor } from '../../domain/metering/charges.js';
import { balanceOf, verifyLedger } from '../../store/ledger.js';
import { bearer, createTestApp, seedAccount, type TestApp } from '../../testing/app.js';
import { deliver, fund, getJob, liveMachine, meterReceipt, reserveJob, runJob } from '../../testing/renting.js';
import { DIALECTS } from '../../testing/stores.js';

// Receipts, stops and budget extensions racing on many jobs at once: nothing deadlocks for good, nothing is
// counted twice, the ledger balances.
describe.each(DIALECTS)('jobs under concurrency on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  beforeAll(async () => {
    t = await createTestApp(dialect, { configOverrides: { newHostMachineCap: 1000 } });
  });
  afterAll(async () => {
    await t.destroy();
  });

  it('applies racing receipts, extensions and stops exactly once each', async () => {
    const renter = await seedAccount(t.ctx);
    await fund(t.ctx, renter.accountId, 100_000_000n);
    const jobs: Array<{ jobId: string; machineId: string; start: Date }> = [];
    for (let i = 0; i < 6; i++) {
      const machine = await liveMachine(t.ctx, t.app);
      const { jobId } = await reserveJob(t.app, renter, machine, { budget_micro: '550000' });
      jobs.push({ jobId, machineId: machine.machineId, start: await runJob(t, machine.machineId, jobId) });
    }
    await t.clock.advance(10 * 30_000);
    const at = (start: Date, ms: number) => new Date(start.getTime() + ms);
    const work: Array<Promise<unknown>> = [];
    for (const [i, job] of jobs.entries()) {
      // Ten receipts per job, each delivered twice (an agent restart resends), in order per job.
      work.push(
        (async () => {
          for (let seq = 1; seq <= 10; seq++) {
            const receipt = () => meterReceipt(job.jobId, 1, seq, at(job.start, (seq - 1) * 30_000), at(job.start, seq * 30_000));
            await Promise.all([deliver(t.ctx, job.machineId, receipt()), deliver(t.ctx, job.machineId, receipt())]);
          }
        })(),
      );
      const post = (url: string, payload: Record<string, unknown>) =>
        t.app.inject({ method: 'POST', url, headers: { ...bearer(renter.apiKey), 'idempotency-key': randomUUID() }, payload });
      work.push(
        post(`/api/v1/jobs/${job.jobId}/budget-extension`, {
          additional_budget_micro: '1000',
          new_duration_limit_s: 3600,
          expected_job_version: '3',
          expected_budget_version: '1',
        }),
      );
      if (i % 2 === 0) work.push(post(`/api/v1/jobs/${job.jobId}/stop`, { reason: 'race' }));
    }
    const results = await Promise.allSettled(work);
    expect(results.filter((r) => r.status === 'rejected')).toEqual([]);
    for (const [i, job] of jobs.entries()) {
      const view = await getJob(t.app, renter, job.jobId);
      expect(view.accepted_runtime_ms).toBe('300000');
      expect(view.state).toBe(i % 2 === 0 ? 'STOPPING' : 'RUNNING');
      const funded = BigInt(view.funded_budget_micro);
      // The extension either landed (versions matched) or lost to the stop, never half.
      expect([550_000n, 551_000n]).toContain(funded);
      expect(view.budget_version).toBe(funded === 551_000n ? '2' : '1');
      const expected = chargesFor({ machineRateMicroPerHour: 500_000n, platformFeeBps: 1000n }, funded, 300_000n);
      expect(view.cumulative_charge_micro).toBe(expected.cumulativeMicro.toString());
      expect(await balanceOf(t.store.db, ledgerAccounts.hold(job.jobId, renter.accountId))).toBe(funded - expected.cumulativeMicro);
    }
    const verification = await verifyLedger(t.store);
    expect(verification.discrepancies).toEqual([]);
    expect(verification.ok).toBe(true);
  });
});
