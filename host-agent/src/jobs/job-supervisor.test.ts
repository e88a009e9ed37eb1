import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JobSupervisor } from './job-supervisor.js';
import { at, createJobKit, type JobKit } from './testing/job-test-kit.js';

describe('JobSupervisor over recorded Docker answers and a manual clock', () => {
  let kit: JobKit;
  const supervisors: JobSupervisor[] = [];

  async function started(overrides: Partial<JobKit['options']> = {}): Promise<JobSupervisor> {
    const supervisor = new JobSupervisor({ ...kit.options, ...overrides });
    supervisors.push(supervisor);
    await supervisor.start();
    return supervisor;
  }

  async function launchReady(supervisor: JobSupervisor, fence = '1') {
    const body = kit.launchBody({ fence });
    await supervisor.handleCommand({ kind: 'launch_job', body });
    await supervisor.settled();
    expect(kit.channel.story(body.job_id).at(-1)).toBe('ready');
    return body;
  }

  beforeEach(async () => {
    kit = await createJobKit();
  });

  afterEach(async () => {
    for (const supervisor of supervisors.splice(0)) await supervisor.close();
    expect(kit.channel.invalid).toEqual([]);
    await kit.cleanup();
  });

  it('meters a whole rental exactly: contiguous receipts, the final one before stopped, then cleaned', async () => {
    const supervisor = await started();
    const body = await launchReady(supervisor);
    expect(supervisor.runningJobs()).toEqual([{ job_id: body.job_id, fence: '1', container_state: 'running' }]);
    await kit.clock.advance(75_000);
    await supervisor.handleCommand({ kind: 'stop_job', body: { job_id: body.job_id, fence: '1', reason: 'done', retrieval_window_s: 0 } });
    await supervisor.settled();
    expect(kit.channel.story()).toEqual([
      'accepted',
      'pulling',
      'pulling',
      'starting',
      'ready',
      'receipt 1',
      'receipt 2',
      'receipt 3 final',
      'stopped',
    ]);
    const receipts = kit.channel.receipts();
    expect(receipts.map((receipt) => [receipt.period_start, receipt.period_end, receipt.runtime_ms])).toEqual([
      [at(0), at(30_000), '30000'],
      [at(30_000), at(60_000), '30000'],
      [at(60_000), at(75_000), '15000'],
    ]);
    // What was metered is exactly what Docker says the container ran.
    const container = await kit.runtime.inspectContainer(`ark-job-${body.job_id}`);
    const ranMs = (container?.finishedAt?.getTime() ?? 0) - (container?.startedAt?.getTime() ?? 0);
    expect(receipts.reduce((sum, receipt) => sum + BigInt(receipt.runtime_ms), 0n)).toBe(BigInt(ranMs));
    expect(kit.channel.statuses().at(-1)).toMatchObject({ status: 'stopped', exit_code: 137, at: at(75_000) });
    expect(supervisor.runningJobs()).toEqual([]);
    await supervisor.handleCommand({ kind: 'clean_job', body: { job_id: body.job_id, fence: '1' } });
    await supervisor.settled();
    expect(kit.channel.story().at(-1)).toBe('cleaned');
    expect(supervisor.job(body.job_id)?.phase).toBe('cleaned');
    expect(supervisor.job(body.job_id)?.launch).toBeUndefined();
    expect(await kit.runtime.inspectContainer(`ark-job-${body.job_id}`)).toBeUndefined();
  });

  it('rebinds to a higher fence: ready again under it, meter_seq from 1; a lower fence is ignored', async () => {
    const supervisor = await started();
    const body = await launchReady(supervisor, '5');
    await kit.clock.advance(30_000);
    await supervisor.handleCommand({
      kind: 'stop_job',
      body: { job_id: body.job_id, fence: '4', reason: 'stale', retrieval_window_s: 60 },
    });
    expect(supervisor.job(body.job_id)).toMatchObject({ fence: '5', phase: 'ready' });
    expect(supervisor.job(body.job_id)?.stop).toBeUndefined();
    expect(supervisor.runningJobs()).toHaveLength(1);

    await supervisor.handleCommand({ kind: 'launch_job', body: { ...body, fence: '6' } });
    const readies = kit.channel.statuses().filter((status) => status.status === 'ready');
    expect(readies.map((status) => [status.fence, status.at])).toEqual([
      ['5', at(0)],
      ['6', at(30_000)],
    ]);
    expect(readies[1]?.evidence).toEqual(readies[0]?.evidence);
    expect(readies[1]?.access).toEqual(readies[0]?.access);
    // The same launch again under the same fence announces where the job is, once more.
    await supervisor.handleCommand({ kind: 'launch_job', body: { ...body, fence: '6' } });
    expect(kit.channel.statuses().filter((status) => status.status === 'ready')).toHaveLength(3);

    await kit.clock.advance(40_000);
    // A stop under a still higher fence rebinds without announcing, then stops.
    await supervisor.handleCommand({ kind: 'stop_job', body: { job_id: body.job_id, fence: '7', reason: 'done', retrieval_window_s: 0 } });
    await supervisor.settled();
    expect(
      kit.channel.receipts().map((receipt) => [receipt.fence, receipt.meter_seq, receipt.period_start, receipt.period_end, receipt.final]),
    ).toEqual([
      ['5', 1, at(0), at(30_000), false],
      ['6', 1, at(30_000), at(60_000), false],
      ['7', 1, at(60_000), at(70_000), true],
    ]);
    expect(kit.channel.statuses().at(-1)).toMatchObject({ status: 'stopped', fence: '7' });
    expect(kit.channel.statuses().filter((status) => status.status === 'ready')).toHaveLength(3);
  });

  it('answers for jobs it does not hold, and refuses commands before start and after close', async () => {
    const early = new JobSupervisor(kit.options);
    const jobId = kit.launchBody().job_id;
    await expect(early.handleCommand({ kind: 'clean_job', body: { job_id: jobId, fence: '1' } })).rejects.toThrow('start() has not run');
    const supervisor = await started();
    await supervisor.handleCommand({ kind: 'stop_job', body: { job_id: jobId, fence: '3', reason: 'x', retrieval_window_s: 0 } });
    await supervisor.handleCommand({ kind: 'clean_job', body: { job_id: jobId, fence: '3' } });
    expect(kit.channel.statuses().map((status) => [status.status, status.fence, status.detail])).toEqual([
      ['stopped', '3', 'the job is not on this machine'],
      ['cleaned', '3', undefined],
    ]);
    expect(kit.runtime.callsOf('removeContainer')).toEqual([[`ark-job-${jobId}`]]);
    expect(kit.runtime.callsOf('removeVolume')).toEqual([[`ark-job-${jobId}`]]);
    await expect(supervisor.handleCommand({ kind: 'launch_job', body: kit.launchBody({ job_id: 'not-a-uuid' }) })).rejects.toThrow(
      'job_id is not a UUID',
    );
    await supervisor.close();
    await expect(supervisor.handleCommand({ kind: 'launch_job', body: kit.launchBody() })).rejects.toThrow('JobSupervisor is closed');
  });

  it('keeps job messages while the channel refuses them and hands them over on the clock, in order, once', async () => {
    const supervisor = await started({ channelRetryMs: 2_000, exitWatchIntervalMs: 60_000 });
    kit.channel.down = true;
    const body = kit.launchBody();
    await supervisor.handleCommand({ kind: 'launch_job', body });
    await supervisor.settled();
    expect(supervisor.job(body.job_id)?.phase).toBe('ready');
    expect(supervisor.job(body.job_id)?.outbox).toHaveLength(5);
    expect(kit.channel.messages).toEqual([]);
    await kit.clock.advance(2_000);
    expect(kit.channel.messages).toEqual([]);
    kit.channel.down = false;
    await kit.clock.advance(2_000);
    expect(kit.channel.story()).toEqual(['accepted', 'pulling', 'pulling', 'starting', 'ready']);
    expect(supervisor.job(body.job_id)?.outbox).toEqual([]);
    await kit.clock.advance(30_000);
    expect(kit.channel.story().slice(5)).toEqual(['receipt 1']);
  });
});
