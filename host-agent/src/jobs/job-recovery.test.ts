import { connect } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { JobRecord } from './job-record.js';
import { JobStore } from './job-store.js';
import { JobSupervisor } from './job-supervisor.js';
import { at, createJobKit, type JobKit } from './testing/job-test-kit.js';

/** Whether something accepts TCP connections on the port (the job's SSH listener). */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('recovery after a restart, over recorded Docker answers and a manual clock', () => {
  let kit: JobKit;
  const supervisors: JobSupervisor[] = [];
  const warnings: string[] = [];

  /** A supervisor over the kit's state directory and engine: a second one is the agent after a restart. */
  async function started(): Promise<JobSupervisor> {
    const logger = { info: () => undefined, warn: (_: unknown, message: string) => void warnings.push(message), error: () => undefined };
    const supervisor = new JobSupervisor({ ...kit.options, logger });
    supervisors.push(supervisor);
    await supervisor.start();
    await supervisor.settled();
    return supervisor;
  }

  async function readyJob(supervisor: JobSupervisor) {
    const body = kit.launchBody();
    await supervisor.handleCommand({ kind: 'launch_job', body });
    await supervisor.settled();
    return body;
  }

  /** Rewrites a job's record as a crash in the middle of `change` would have left it. */
  async function crashDuring(jobId: string, change: (record: JobRecord) => void) {
    const store = new JobStore(kit.stateDir);
    const record = (await store.loadAll()).find((each) => each.job_id === jobId) as JobRecord;
    change(record);
    await store.save(record);
  }

  beforeEach(async () => {
    kit = await createJobKit();
    warnings.length = 0;
  });

  afterEach(async () => {
    for (const supervisor of supervisors.splice(0)) await supervisor.close();
    expect(kit.channel.invalid).toEqual([]);
    await kit.cleanup();
  });

  it('takes over a running job: SSH back, metering resumed with the next meter_seq, the downtime included', async () => {
    const first = await started();
    const body = await readyJob(first);
    const sshPort = first.job(body.job_id)?.ssh_port as number;
    await kit.clock.advance(30_000);
    await first.close();
    expect(await listening(sshPort)).toBe(false);
    // The agent is down for 95 s; Docker keeps the container running.
    await kit.clock.advance(95_000);
    const second = await started();
    expect(second.runningJobs()).toEqual([{ job_id: body.job_id, fence: '1', container_state: 'running' }]);
    expect(await listening(sshPort)).toBe(true);
    // The overdue receipt went out at once, covering the downtime; then every 30 s again.
    await kit.clock.advance(30_000);
    expect(
      kit.channel.receipts().map((receipt) => [receipt.meter_seq, receipt.period_start, receipt.period_end, receipt.runtime_ms]),
    ).toEqual([
      [1, at(0), at(30_000), '30000'],
      [2, at(30_000), at(125_000), '95000'],
      [3, at(125_000), at(155_000), '30000'],
    ]);
    // Nothing was announced twice.
    expect(kit.channel.story().filter((word) => word === 'ready')).toHaveLength(1);
  });

  it('ends the meter of a container that stopped while the agent was down, at Docker finish time', async () => {
    const first = await started();
    const body = await readyJob(first);
    await kit.clock.advance(30_000);
    await first.close();
    await kit.clock.advance(10_000);
    kit.runtime.exitOnItsOwn(`ark-job-${body.job_id}`);
    await kit.clock.advance(50_000);
    const second = await started();
    expect(kit.channel.story().slice(-3)).toEqual(['receipt 1', 'receipt 2 final', 'exited']);
    expect(kit.channel.receipts()[1]).toMatchObject({ period_start: at(30_000), period_end: at(90_000), runtime_ms: '10000' });
    expect(kit.channel.statuses().at(-1)).toMatchObject({ status: 'exited', exit_code: 3, at: at(90_000) });
    expect(second.runningJobs()).toEqual([]);
    expect(await listening(second.job(body.job_id)?.ssh_port as number)).toBe(false);
  });

  it('finishes a stop and a clean that a crash interrupted, and redoes an interrupted launch', async () => {
    const first = await started();
    const stopping = await readyJob(first);
    const cleaning = await readyJob(first);
    await kit.clock.advance(20_000);
    await first.close();
    await crashDuring(stopping.job_id, (record) => {
      record.phase = 'stopping';
      record.stop = { reason: 'renter asked', retrieval_window_s: 0, requested_at: at(20_000) };
    });
    await crashDuring(cleaning.job_id, (record) => {
      record.stop = { reason: 'cleaned', retrieval_window_s: 0, requested_at: at(20_000) };
      record.clean_requested_at = at(20_000);
    });
    const pulling = kit.launchBody();
    const store = new JobStore(kit.stateDir);
    const name = `ark-job-${pulling.job_id}`;
    await store.save({
      version: 1,
      job_id: pulling.job_id,
      fence: '1',
      phase: 'pulling',
      launch: pulling,
      accepted_at: at(19_000),
      updated_at: at(19_000),
      container_name: name,
      volume_name: name,
      outbox: [],
    });
    await kit.clock.advance(5_000);
    const second = await started();
    expect(kit.channel.story(stopping.job_id).slice(-2)).toEqual(['receipt 1 final', 'stopped']);
    expect(kit.channel.receipts(stopping.job_id)[0]).toMatchObject({ period_end: at(25_000), runtime_ms: '25000' });
    expect(kit.channel.story(cleaning.job_id).slice(-3)).toEqual(['receipt 1 final', 'stopped', 'cleaned']);
    expect(await kit.runtime.inspectContainer(`ark-job-${cleaning.job_id}`)).toBeUndefined();
    expect(kit.channel.story(pulling.job_id)).toEqual(['pulling', 'starting', 'ready']);
    expect(second.runningJobs().map((job) => job.job_id)).toEqual([pulling.job_id]);
  });

  it('serves retrieval again inside its window, and not after it', async () => {
    const first = await started();
    const body = await readyJob(first);
    await first.handleCommand({ kind: 'stop_job', body: { job_id: body.job_id, fence: '1', reason: 'done', retrieval_window_s: 60 } });
    await first.settled();
    const sshPort = first.job(body.job_id)?.ssh_port as number;
    expect(await listening(sshPort)).toBe(true);
    await first.close();
    await kit.clock.advance(30_000);
    const second = await started();
    expect(await listening(sshPort)).toBe(true);
    await second.close();
    await kit.clock.advance(30_000);
    await started();
    expect(await listening(sshPort)).toBe(false);
  });

  it('drops cleaned records past retention, and reports job containers it holds no record of', async () => {
    const first = await started();
    const kept = await readyJob(first);
    const gone = await readyJob(first);
    for (const body of [kept, gone]) await first.handleCommand({ kind: 'clean_job', body: { job_id: body.job_id, fence: '1' } });
    await first.settled();
    await first.close();
    await crashDuring(gone.job_id, (record) => {
      record.updated_at = at(-8 * 24 * 3_600_000);
    });
    const orphan = kit.launchBody();
    await kit.runtime.createContainer({
      name: `ark-job-${orphan.job_id}`,
      image: orphan.image_digest,
      labels: { 'ark.job_id': orphan.job_id },
      env: {},
      volumeName: 'v',
      volumeMountPath: '/workspace',
      networkMode: 'host',
      portBindings: [],
      gpuDeviceIds: [],
    });
    const listed = kit.runtime.callsOf('listContainers').length;
    const second = await started();
    expect(second.job(kept.job_id)?.phase).toBe('cleaned');
    expect(second.job(gone.job_id)).toBeUndefined();
    // With only cleaned jobs, start makes no Docker call; the sweep waits for the first job command.
    expect(kit.runtime.callsOf('listContainers')).toHaveLength(listed);
    expect(warnings).not.toContain('job container without a job record');
    await second.handleCommand({ kind: 'clean_job', body: { job_id: kept.job_id, fence: '1' } });
    await second.settled();
    expect(warnings).toContain('job container without a job record');
    expect(kit.channel.story(kept.job_id).at(-1)).toBe('cleaned');
  });
});
