import { randomUUID } from 'node:crypto';
import type { MeterReceiptMessage } from '@ark/shared';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../clock.js';
import type { MessageOfMachine } from '../../gateway/handlers.js';
import { verifyLedger } from '../../store/ledger.js';
import { createTestApp, seedAccount, type TestApp } from '../../testing/app.js';
import { fund, type LiveMachine, liveMachine, meterReceipt, reserveJob, runJob } from '../../testing/renting.js';
import { DIALECTS } from '../../testing/stores.js';

// A group of receipts applied together (the gateway's group commit, metering-batch.ts) leaves every job, event,
// lot and balance exactly where the same receipts applied one at a time leave them: twin jobs on twin machines get
// the same receipts, one twin one by one, the other in groups, and every row is compared. The receipts walk each
// job through a first charge, plain acceptances, the 50 and 80 % thresholds and the budget's end (a stop), with a
// second receipt of one job in a group, a resent meter seq, a stale fence, an unknown job and a foreign machine.

const PERIOD_MS = 10 * 60_000;

interface Twin {
  machine: LiveMachine;
  jobId: string;
  start: Date;
}

describe.each(DIALECTS)('meter receipts in groups on %s', (dialect) => {
  let t: TestApp<ManualClock>;
  beforeEach(async () => {
    t = await createTestApp(dialect);
  });
  afterEach(async () => {
    await t.destroy();
  });

  async function twin(renter: Awaited<ReturnType<typeof seedAccount>>): Promise<Twin> {
    const machine = await liveMachine(t.ctx, t.app);
    const { jobId } = await reserveJob(t.app, renter, machine);
    const start = await runJob(t, machine.machineId, jobId);
    return { machine, jobId, start };
  }

  const receipt = (job: Twin, seq: number, options: { fence?: string } = {}): MachineReceipt => {
    const from = new Date(job.start.getTime() + (seq - 1) * PERIOD_MS);
    return {
      machineId: job.machine.machineId,
      msg: meterReceipt(job.jobId, options.fence ?? '1', seq, from, new Date(from.getTime() + PERIOD_MS)),
    };
  };

  /** The groups for one side: `[single, pair, resent, fenced]` are that side's four jobs. */
  function groupsFor([single, pair, resent, fenced]: [Twin, Twin, Twin, Twin]): MachineReceipt[][] {
    const groups: MachineReceipt[][] = [];
    for (let k = 1; k <= 6; k++) {
      const group = [receipt(single, k), receipt(resent, k)];
      if (k <= 3) group.push(receipt(pair, 2 * k - 1), receipt(pair, 2 * k));
      if (k > 1) group.push(receipt(resent, k - 1));
      group.push(receipt(fenced, k, k === 3 ? { fence: '9' } : {}));
      // An unknown job, and a job's receipt on a machine that does not run it: no effect either way.
      group.push({ machineId: fenced.machine.machineId, msg: { ...receipt(single, k).msg, job_id: randomUUID() } });
      group.push({ machineId: pair.machine.machineId, msg: receipt(fenced, k + 1).msg });
      groups.push(group);
    }
    return groups;
  }

  async function snapshot(job: Twin) {
    const db = t.store.db;
    const row = await db
      .selectFrom('jobs')
      .select([
        'state',
        'accepted_runtime_ms',
        'cumulative_charge_micro',
        'charged_host_micro',
        'charged_fee_micro',
        'meter_seq',
        'metered_until',
        'close_reason',
      ])
      .where('id', '=', job.jobId)
      .executeTakeFirstOrThrow();
    const events = await db.selectFrom('job_events').select(['kind', 'message']).where('job_id', '=', job.jobId).orderBy('seq').execute();
    const lots = await db
      .selectFrom('pending_earnings')
      .select('amount_micro')
      .where('job_id', '=', job.jobId)
      .orderBy('amount_micro')
      .execute();
    const holds = await db.selectFrom('ledger_accounts').select('balance_micro').where('owner_id', '=', job.jobId).execute();
    const postings = await db
      .selectFrom('ledger_postings')
      .select(['kind', 'amount_micro'])
      .where('reference', '=', job.jobId)
      .orderBy('kind')
      .orderBy('amount_micro')
      .execute();
    const webhooks = await db
      .selectFrom('webhook_events')
      .select('type')
      .where('payload', 'like', `%${job.jobId}%`)
      .orderBy('type')
      .execute();
    const text = (value: unknown) => JSON.parse(JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)));
    // Twins started a few seconds apart: times are compared from each job's start.
    const meteredForMs = row.metered_until === null ? null : Date.parse(row.metered_until) - job.start.getTime();
    return text({
      row: { ...row, metered_until: meteredForMs },
      events,
      lots: lots.map((l) => String(l.amount_micro)),
      holds: holds.map((h) => String(h.balance_micro)),
      postings,
      webhooks,
    });
  }

  it('leaves jobs, events, lots and the ledger as receipts applied one at a time do', async () => {
    const renter = await seedAccount(t.ctx);
    await fund(t.ctx, renter.accountId, 10n ** 12n);
    const alone = [await twin(renter), await twin(renter), await twin(renter), await twin(renter)] as [Twin, Twin, Twin, Twin];
    const grouped = [await twin(renter), await twin(renter), await twin(renter), await twin(renter)] as [Twin, Twin, Twin, Twin];
    await t.clock.advance(7 * PERIOD_MS);
    const now = () => t.clock.now();
    for (const group of groupsFor(alone)) {
      for (const { machineId, msg } of group) {
        await t.store.db.transaction().execute((trx) => t.ctx.channel.apply(trx, machineId, msg, now()));
      }
    }
    for (const group of groupsFor(grouped)) {
      await t.store.db.transaction().execute((trx) => t.ctx.channel.applyAll(trx, group, now()));
    }
    for (let i = 0; i < 4; i++) expect(await snapshot(grouped[i] as Twin)).toEqual(await snapshot(alone[i] as Twin));
    // The walk reached what it meant to: the budget's end stopped the single and the resent jobs.
    const single = await snapshot(grouped[0] as Twin);
    expect(single.row.state).toBe('STOPPING');
    expect(single.events.map((e: { kind: string }) => e.kind)).toContain('state_changed');
    expect((await snapshot(grouped[3] as Twin)).events.map((e: { kind: string }) => e.kind)).toContain('receipt_refused');
    expect((await verifyLedger(t.store)).ok).toBe(true);
  });
});

type MachineReceipt = MessageOfMachine<MeterReceiptMessage>;
