import { access } from 'node:fs/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JobAccessListener } from './job-access.js';
import type { JobContext, LiveJob } from './job-context.js';
import { JobMetering } from './job-metering.js';
import { JobRetrieval } from './job-retrieval.js';
import { JobStopper } from './job-stop.js';
import { at, createJobKit, type JobKit } from './testing/job-test-kit.js';

const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

describe('JobStopper on a manual clock', () => {
  let kit: JobKit;
  let context: JobContext;
  let metering: JobMetering;
  let stopper: JobStopper;

  beforeEach(async () => {
    kit = await createJobKit({ volumes: true });
    context = kit.context();
    const listener = new JobAccessListener(context);
    metering = new JobMetering(context, listener);
    stopper = new JobStopper(context, listener, metering, new JobRetrieval(context, listener));
  });

  afterEach(async () => {
    context.lifecycle.closing = true;
    for (const job of context.jobs.values()) await job.ssh?.close();
    expect(kit.channel.invalid).toEqual([]);
    await kit.cleanup();
  });

  function requestStop(job: LiveJob, retrievalWindowS = 0) {
    job.record.stop = { reason: 'renter asked', retrieval_window_s: retrievalWindowS, requested_at: kit.clock.now().toISOString() };
  }

  it('stops the container with its grace, sends the final receipt up to Docker finish time, then stopped', async () => {
    const job = await kit.readyJob(context);
    metering.schedule(job);
    await kit.clock.advance(42_000);
    requestStop(job);
    await stopper.stop(job);
    expect(kit.runtime.callsOf('stopContainer')).toEqual([[job.record.container_id, 10]]);
    expect(kit.channel.story()).toEqual(['receipt 1', 'receipt 2 final', 'stopped']);
    expect(kit.channel.receipts()[1]).toMatchObject({ period_start: at(30_000), period_end: at(42_000), runtime_ms: '12000' });
    // SIGKILL after the grace, as Docker recorded it.
    expect(kit.channel.statuses()[0]).toMatchObject({ status: 'stopped', exit_code: 137, at: at(42_000) });
    expect(job.record).toMatchObject({ phase: 'stopped', stopped_at: at(42_000), retrieval_until: at(42_000), exit_code: 137 });
    expect(job.record.meter).toMatchObject({ seq: 2, final_sent: true, runtime_ms_total: '42000' });
    // The meter's timer went with it.
    expect(kit.clock.pendingTimers).toBe(0);
    // A repeated stop is answered with where the job is: no second final receipt.
    await stopper.stop(job);
    expect(kit.channel.story()).toEqual(['receipt 1', 'receipt 2 final', 'stopped', 'stopped']);
  });

  it('opens the retrieval window before it reports stopped', async () => {
    const job = await kit.readyJob(context);
    requestStop(job, 60);
    await stopper.stop(job);
    expect(job.ssh).toBeDefined();
    expect(job.record.retrieval_until).toBe(at(60_000));
    expect(kit.channel.story()).toEqual(['receipt 1 final', 'stopped']);
    expect(kit.clock.peek()).toBe(60_000);
    await kit.clock.advance(60_000);
    expect(job.ssh).toBeUndefined();
  });

  it('cleans a running job: stopped first (final receipt), then container, volume and host key removed, and the secrets dropped', async () => {
    const job = await kit.readyJob(context);
    const keyPath = context.store.hostKeyPath(job.record.job_id);
    const { loadOrCreateHostKey } = await import('../access/host-key.js');
    await loadOrCreateHostKey(keyPath);
    await kit.clock.advance(5_000);
    job.record.stop = { reason: 'cleaned', retrieval_window_s: 0, requested_at: at(5_000) };
    job.record.clean_requested_at = at(5_000);
    await stopper.clean(job);
    expect(kit.channel.story()).toEqual(['receipt 1 final', 'stopped', 'cleaned']);
    expect(await kit.runtime.inspectContainer(job.record.container_name)).toBeUndefined();
    expect(await kit.runtime.volumeMountpoint(job.record.volume_name)).toBeUndefined();
    expect(await exists(keyPath)).toBe(false);
    expect(job.record.phase).toBe('cleaned');
    expect(job.record.launch).toBeUndefined();
    expect((await context.store.loadAll())[0]?.launch).toBeUndefined();
    // Cleaning again just says so.
    await stopper.clean(job);
    expect(kit.channel.story()).toEqual(['receipt 1 final', 'stopped', 'cleaned', 'cleaned']);
  });

  it('retries a removal Docker refused, waiting 2 s, then 4 s, on the clock', async () => {
    const job = await kit.readyJob(context);
    requestStop(job);
    await stopper.stop(job);
    kit.runtime.failNext('removeContainer');
    kit.runtime.failNext('removeContainer');
    await stopper.clean(job);
    expect(job.record.phase).toBe('cleaning');
    expect(kit.clock.peek()).toBe(2_000);
    await kit.clock.advance(2_000);
    expect(job.record.phase).toBe('cleaning');
    expect(kit.clock.peek()).toBe(4_000);
    await kit.clock.advance(4_000);
    expect(job.record.phase).toBe('cleaned');
    expect(kit.runtime.callsOf('removeContainer')).toHaveLength(3);
    expect(kit.channel.story()).toEqual(['receipt 1 final', 'stopped', 'cleaned']);
  });

  it('gives up retrying after five attempts, leaving the record cleaning for the next command or restart', async () => {
    const job = await kit.readyJob(context);
    requestStop(job);
    await stopper.stop(job);
    for (let attempt = 0; attempt < 5; attempt += 1) kit.runtime.failNext('removeVolume');
    await stopper.clean(job);
    for (const waitMs of [2_000, 4_000, 8_000, 16_000]) {
      expect(kit.clock.peek()).toBe(waitMs);
      await kit.clock.advance(waitMs);
    }
    expect(kit.clock.pendingTimers).toBe(0);
    expect(job.record.phase).toBe('cleaning');
    expect(kit.runtime.callsOf('removeVolume')).toHaveLength(5);
  });
});
