import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../clock.js';
import { createTestApp, seedAccount, type TestApp } from '../testing/app.js';
import { deliver, fund, getJob, jobStatus, liveMachine, reserveJob, runJob } from '../testing/renting.js';
import { DIALECTS } from '../testing/stores.js';
import { sweepCommand } from './jobs.js';

describe.each(DIALECTS)('ark-cp jobs sweep on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  beforeAll(async () => {
    t = await createTestApp(dialect, { configOverrides: { retrievalWindowS: 60 } });
  });
  afterAll(async () => {
    await t.destroy();
  });

  it('runs every sweep once and reports what moved', async () => {
    const renter = await seedAccount(t.ctx);
    await fund(t.ctx, renter.accountId, 10_000_000n);
    const machine = await liveMachine(t.ctx, t.app);
    const { jobId } = await reserveJob(t.app, renter, machine);
    await runJob(t, machine.machineId, jobId);
    await t.app.inject({
      method: 'POST',
      url: `/api/v1/jobs/${jobId}/stop`,
      headers: { authorization: `Bearer ${renter.apiKey}`, 'idempotency-key': crypto.randomUUID() },
      payload: { reason: 'done' },
    });
    await deliver(t.ctx, machine.machineId, jobStatus(jobId, 1, 'stopped', t.clock.now()));
    await t.clock.advance(60_000);
    const report = await sweepCommand(t.ctx.services.jobs.sweeps, t.clock.now());
    expect(report).toEqual({ funding: 0, liveness: 0, start_timeout: 0, retrieval: 1, quotes: 0 });
    expect((await getJob(t.app, renter, jobId)).state).toBe('CLEANING');
  });
});
