import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { JobLimits } from '@ark/shared';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JobAccessListener } from './job-access.js';
import { formatBytes, quotaVerdict } from './job-confinement.js';
import type { JobContext, LiveJob } from './job-context.js';
import { JobMetering } from './job-metering.js';
import { at, createJobKit, type JobKit } from './testing/job-test-kit.js';

const LIMITS: JobLimits = { nano_cpus: 1_000_000_000, memory_bytes: String(256 * 1024 ** 2), pids: 64 };
const MIB = 1024 ** 2;

describe('quotaVerdict', () => {
  it('warns once at 90% of the included amount and calls anything past it exceeded', () => {
    expect(quotaVerdict(899, 1000, false)).toBe('within');
    expect(quotaVerdict(900, 1000, false)).toBe('warn');
    expect(quotaVerdict(950, 1000, true)).toBe('within');
    expect(quotaVerdict(1000, 1000, true)).toBe('within');
    expect(quotaVerdict(1001, 1000, true)).toBe('exceeded');
    expect(quotaVerdict(5000, 1000, false)).toBe('exceeded');
    expect([formatBytes(1.5 * 1024 ** 3), formatBytes(3 * MIB)]).toEqual(['1.50 GiB', '3.0 MiB']);
  });
});

describe('JobConfinement through the meter ticks, on a manual clock', () => {
  let kit: JobKit;
  let context: JobContext;
  let metering: JobMetering;

  beforeEach(async () => {
    kit = await createJobKit({ exitWatchIntervalMs: 1_000, confinementCheckIntervalMs: 1_000, diskCheckIntervalMs: 5_000, volumes: true });
    context = kit.context();
    metering = new JobMetering(context, new JobAccessListener(context));
  });

  afterEach(async () => {
    context.lifecycle.closing = true;
    for (const job of context.jobs.values()) await job.ssh?.close();
    expect(kit.channel.invalid).toEqual([]);
    await kit.cleanup();
  });

  /** A ready job whose container was created with LIMITS (as job-launch records it), its ticks running. */
  const confinedJob = async (launch: Parameters<JobKit['readyJob']>[1] = {}): Promise<LiveJob> => {
    const job = await kit.readyJob(context, { limits: LIMITS, ...launch });
    job.record.confinement = { limits: LIMITS, isolation: 'runc' };
    metering.schedule(job);
    return job;
  };
  const kinds = (jobId: string) => kit.channel.events(jobId).map((event) => event.kind);

  it('tells the pids limit reached once each time the job gets there, and each OOM kill; the job goes on', async () => {
    const job = await confinedJob();
    const id = job.record.container_name;
    kit.runtime.setUsage(id, { pids: 12 });
    await kit.clock.advance(1_000);
    expect(kinds(job.record.job_id)).toEqual([]);

    kit.runtime.setUsage(id, { pids: 64 });
    await kit.clock.advance(1_000);
    await kit.clock.advance(1_000);
    expect(kit.channel.events(job.record.job_id)).toEqual([
      {
        t: 'job_event',
        job_id: job.record.job_id,
        fence: '1',
        at: at(2_000),
        kind: 'pids_limit_reached',
        message: 'The job holds 64 processes, its limit: it cannot start more until some end. The machine is unaffected.',
        data: { pids: 64, pids_limit: 64 },
      },
    ]);
    kit.runtime.setUsage(id, { pids: 20 });
    await kit.clock.advance(1_000);
    kit.runtime.setUsage(id, { pids: 64 });
    await kit.clock.advance(1_000);
    expect(kinds(job.record.job_id)).toEqual(['pids_limit_reached', 'pids_limit_reached']);

    // The engine records the kill; the watch reads its events a little behind now, and counts each once.
    kit.runtime.oomKill(id);
    kit.runtime.oomKill(id);
    await kit.clock.advance(5_000);
    const oom = kit.channel.events(job.record.job_id).filter((event) => event.kind === 'oom_kill');
    expect(oom).toHaveLength(1);
    expect(oom[0]).toMatchObject({
      message: '2 processes of the job were killed for going past its memory limit of 256.0 MiB; the job goes on.',
      data: { kills: 2, memory_limit_bytes: String(256 * MIB) },
    });
    await kit.clock.advance(30_000);
    expect(kinds(job.record.job_id).filter((kind) => kind === 'oom_kill')).toHaveLength(1);
    expect(job.record.phase).toBe('ready');
    expect(kit.runtime.callsOf('stopContainer')).toEqual([]);
    // Receipts went on throughout.
    expect(kit.channel.receipts(job.record.job_id).length).toBeGreaterThanOrEqual(1);
    // What was told is on the record: a restarted agent does not tell it again.
    expect((await context.store.loadAll())[0]?.confinement).toMatchObject({ pids_at_limit: true, oom_checked_until: expect.any(String) });
  });

  it('warns at 90% of the included egress, then stops the container past it; the exited status says why', async () => {
    const job = await confinedJob({ included_egress_bytes: String(10 * MIB) });
    const id = job.record.container_name;
    kit.runtime.setUsage(id, { networkTxBytes: 5 * MIB });
    await kit.clock.advance(1_000);
    kit.runtime.setUsage(id, { networkTxBytes: 9.5 * MIB });
    await kit.clock.advance(1_000);
    await kit.clock.advance(1_000);
    expect(kinds(job.record.job_id)).toEqual(['egress_quota_warning']);
    expect(kit.channel.events(job.record.job_id)[0]).toMatchObject({
      at: at(2_000),
      message: 'The job has sent 9.5 MiB of its included egress of 10.0 MiB; past it the job is stopped.',
      data: { used_bytes: 9.5 * MIB, included_egress_bytes: String(10 * MIB) },
    });

    kit.runtime.setUsage(id, { networkTxBytes: 10 * MIB + 1 });
    await kit.clock.advance(1_000);
    expect(kit.runtime.callsOf('stopContainer')).toEqual([[job.record.container_id, 10]]);
    expect(kit.channel.story(job.record.job_id)).toEqual(['egress_quota_warning', 'egress_quota_exceeded', 'receipt 1 final', 'exited']);
    expect(kit.channel.events(job.record.job_id)[1]).toMatchObject({
      at: at(4_000),
      message: 'The job has sent 10.0 MiB, past its included egress of 10.0 MiB: the agent stopped its container.',
    });
    expect(kit.channel.statuses(job.record.job_id).at(-1)).toMatchObject({
      status: 'exited',
      exit_code: 137,
      detail: expect.stringMatching(/^the agent stopped the container: it went past its included egress of 10\.0 MiB/),
    });
    expect(job.record).toMatchObject({ phase: 'exited', confinement: { stopped_for: 'egress', egress_warned: true } });
  });

  it('still warns before it stops when one reading jumps past both marks', async () => {
    const job = await confinedJob({ included_egress_bytes: String(10 * MIB) });
    kit.runtime.setUsage(job.record.container_name, { networkTxBytes: 12 * MIB });
    await kit.clock.advance(1_000);
    expect(kit.runtime.callsOf('stopContainer')).toEqual([[job.record.container_id, 10]]);
    expect(kinds(job.record.job_id)).toEqual(['egress_quota_warning', 'egress_quota_exceeded']);
    expect(job.record).toMatchObject({ confinement: { stopped_for: 'egress', egress_warned: true } });
  });

  it('measures the volume from the host and the writable layer against the included disk', async () => {
    const job = await confinedJob({ included_disk_bytes: String(MIB) });
    const id = job.record.container_name;
    const volume = (await kit.runtime.volumeMountpoint(job.record.volume_name)) as string;
    await writeFile(join(volume, 'a.bin'), Buffer.alloc(100 * 1024, 1));
    await kit.clock.advance(1_000);
    expect(kinds(job.record.job_id)).toEqual([]);

    // 100 KiB in the volume and 900,000 bytes written over the image: past 90% of 1 MiB.
    kit.runtime.setUsage(id, { writableBytes: 900_000 });
    await kit.clock.advance(5_000);
    expect(kinds(job.record.job_id)).toEqual(['disk_quota_warning']);
    const warning = kit.channel.events(job.record.job_id)[0];
    expect(warning?.data.writable_layer_bytes).toBe(900_000);
    expect(warning?.data.volume_bytes).toBeGreaterThanOrEqual(100 * 1024);
    // Within the disk interval nothing is measured again.
    await writeFile(join(volume, 'b.bin'), Buffer.alloc(100 * 1024, 2));
    await kit.clock.advance(4_000);
    expect(kit.runtime.callsOf('containerWritableBytes')).toHaveLength(2);
    await kit.clock.advance(1_000);
    expect(kinds(job.record.job_id)).toEqual(['disk_quota_warning', 'disk_quota_exceeded']);
    expect(kit.channel.statuses(job.record.job_id).at(-1)).toMatchObject({
      status: 'exited',
      detail: expect.stringMatching(/^the agent stopped the container: it went past its included disk of 1\.0 MiB/),
    });
  });

  it('says once that the egress of a job on the host network cannot be counted', async () => {
    const job = await confinedJob({ included_egress_bytes: String(MIB) });
    kit.runtime.setUsage(job.record.container_name, { pids: 3 });
    await kit.clock.advance(5_000);
    expect(kinds(job.record.job_id)).toEqual(['egress_unmetered']);
    expect(job.record.phase).toBe('ready');
  });

  it('still enforces for a control plane that does not take job_event, telling it nothing but the exit', async () => {
    const job = await kit.readyJob(context, { included_egress_bytes: String(MIB) });
    job.record.confinement = { limits: LIMITS, isolation: 'runc' };
    metering.schedule(job);
    kit.runtime.setUsage(job.record.container_name, { networkTxBytes: 2 * MIB });
    await kit.clock.advance(1_000);
    expect(kit.channel.story(job.record.job_id)).toEqual(['receipt 1 final', 'exited']);
    expect(kit.channel.statuses(job.record.job_id).at(-1)?.detail).toMatch(/went past its included egress/);
  });

  it("tells an OOM kill of the container's main process with its exit", async () => {
    const job = await confinedJob();
    await kit.clock.advance(1_000);
    kit.runtime.oomKill(job.record.container_name, true);
    await kit.clock.advance(1_000);
    expect(kit.channel.story(job.record.job_id)).toEqual(['oom_kill', 'receipt 1 final', 'exited']);
    expect(kit.channel.events(job.record.job_id)[0]).toMatchObject({
      message: "The job's main process was killed for going past its memory limit of 256.0 MiB.",
      data: { main_process: true },
    });
    expect(kit.channel.statuses(job.record.job_id).at(-1)).toMatchObject({
      exit_code: 137,
      detail: expect.stringMatching(/^killed for going past its memory limit/),
    });
  });

  it('leaves a job launched before confinement alone', async () => {
    const job = await kit.readyJob(context, { included_egress_bytes: String(MIB) });
    metering.schedule(job);
    kit.runtime.setUsage(job.record.container_name, { networkTxBytes: 2 * MIB, pids: 10_000 });
    await kit.clock.advance(5_000);
    expect(kit.channel.story(job.record.job_id)).toEqual([]);
    expect(kit.runtime.callsOf('containerUsage')).toEqual([]);
  });
});
