import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JobAccessListener } from './job-access.js';
import type { JobContext } from './job-context.js';
import { JobMetering } from './job-metering.js';
import { at, createJobKit, type JobKit } from './testing/job-test-kit.js';

describe('JobMetering on a manual clock', () => {
  let kit: JobKit;
  let context: JobContext;
  let metering: JobMetering;

  beforeEach(async () => {
    kit = await createJobKit({ exitWatchIntervalMs: 5_000 });
    context = kit.context();
    metering = new JobMetering(context, new JobAccessListener(context));
  });

  afterEach(async () => {
    context.lifecycle.closing = true;
    for (const job of context.jobs.values()) await job.ssh?.close();
    expect(kit.channel.invalid).toEqual([]);
    await kit.cleanup();
  });

  it('sends one receipt per interval, tick by tick, from Docker start time over contiguous periods', async () => {
    const job = await kit.readyJob(context);
    metering.schedule(job);
    // Every 5 s the container is checked; the receipt is due at 30 s.
    expect(kit.clock.peek()).toBe(5_000);
    await kit.clock.advance(29_999);
    expect(kit.channel.receipts()).toEqual([]);
    expect(kit.runtime.callsOf('inspectContainer')).toHaveLength(5);
    await kit.clock.advance(1);
    expect(kit.channel.receipts()).toEqual([
      {
        t: 'meter_receipt',
        job_id: job.record.job_id,
        fence: '1',
        meter_seq: 1,
        period_start: at(0),
        period_end: at(30_000),
        runtime_ms: '30000',
        final: false,
      },
    ]);
    await kit.clock.advance(30_000);
    expect(
      kit.channel.receipts().map((receipt) => [receipt.meter_seq, receipt.period_start, receipt.period_end, receipt.runtime_ms]),
    ).toEqual([
      [1, at(0), at(30_000), '30000'],
      [2, at(30_000), at(60_000), '30000'],
    ]);
    // The record is written before the receipt is handed over: a restart resumes after seq 2.
    expect((await context.store.loadAll())[0]?.meter).toEqual({
      seq: 2,
      period_end: at(60_000),
      final_sent: false,
      runtime_ms_total: '60000',
    });
    expect(job.containerState).toBe('running');
  });

  it('ends the meter when the container exits on its own: the final receipt stops at Docker finish time', async () => {
    const job = await kit.readyJob(context);
    metering.schedule(job);
    await kit.clock.advance(37_000);
    kit.runtime.exitOnItsOwn(job.record.container_name);
    await kit.clock.advance(3_000);
    const receipts = kit.channel.receipts();
    expect(
      receipts.map((receipt) => [receipt.meter_seq, receipt.period_start, receipt.period_end, receipt.runtime_ms, receipt.final]),
    ).toEqual([
      [1, at(0), at(30_000), '30000', false],
      [2, at(30_000), at(40_000), '7000', true],
    ]);
    const exited = kit.channel.statuses().at(-1);
    expect(exited).toMatchObject({ status: 'exited', exit_code: 3, at: at(40_000) });
    // The recorded output names the job's secret; the detail does not.
    expect(exited?.detail).toBe('last output:\nto stderr\nboom [redacted]');
    expect(job.record).toMatchObject({ phase: 'exited', exit_code: 3, meter: { final_sent: true } });
    // Nothing more is metered.
    expect(kit.clock.pendingTimers).toBe(0);
    await kit.clock.advance(60_000);
    expect(kit.channel.receipts()).toHaveLength(2);
  });

  it('fails a job whose container vanished, with a final receipt for the time it was seen running', async () => {
    const job = await kit.readyJob(context);
    metering.schedule(job);
    await kit.clock.advance(10_000);
    kit.runtime.vanish(job.record.container_id as string);
    await kit.clock.advance(5_000);
    expect(kit.channel.story()).toEqual(['receipt 1 final', 'failed']);
    expect(kit.channel.receipts()[0]).toMatchObject({ period_start: at(0), period_end: at(15_000), runtime_ms: '0' });
    expect(kit.channel.statuses()[0]).toMatchObject({ detail: 'the container disappeared while the job ran' });
    expect(job.record.phase).toBe('failed');
    expect(job.containerState).toBe('missing');
  });

  it('sends nothing while Docker does not answer, and asks again a watch interval later even when a receipt is overdue', async () => {
    const job = await kit.readyJob(context);
    metering.schedule(job);
    await kit.clock.advance(20_000);
    // Between receipts a failed check waits for the next tick.
    kit.runtime.failNext('inspectContainer');
    await kit.clock.advance(5_000);
    expect(kit.clock.peek()).toBe(5_000);
    // At the due tick the receipt is overdue, yet a failing engine is asked again only a watch interval later (never
    // in a busy loop); the receipt that follows covers the whole time.
    kit.runtime.failNext('inspectContainer');
    await kit.clock.advance(5_000);
    expect(kit.channel.receipts()).toEqual([]);
    expect(kit.clock.peek()).toBe(5_000);
    await kit.clock.advance(5_000);
    expect(kit.channel.receipts().map((receipt) => [receipt.period_start, receipt.period_end, receipt.runtime_ms])).toEqual([
      [at(0), at(35_000), '35000'],
    ]);
  });

  it('arms nothing once the supervisor closes, or for a job that is not ready', async () => {
    const job = await kit.readyJob(context);
    job.record.phase = 'stopped';
    metering.schedule(job);
    expect(kit.clock.pendingTimers).toBe(0);
    job.record.phase = 'ready';
    context.lifecycle.closing = true;
    metering.schedule(job);
    expect(kit.clock.pendingTimers).toBe(0);
  });
});
