import type { LaunchJobBody } from '@ark/shared';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ContainerSpec } from '../runtime/container-runtime.js';
import { JobAccessListener } from './job-access.js';
import { type JobContext, type LiveJob, liveJob } from './job-context.js';
import { JobLaunch } from './job-launch.js';
import { JobMetering } from './job-metering.js';
import { JOB_RECORD_VERSION } from './job-record.js';
import { at, closedPort, createJobKit, type JobKit, until } from './testing/job-test-kit.js';

describe('JobLaunch with recorded Docker answers', () => {
  let kit: JobKit;
  let context: JobContext;
  let launch: JobLaunch;

  async function setUp(overrides: Parameters<typeof createJobKit>[0] = {}) {
    kit = await createJobKit(overrides);
    context = kit.context();
    const access = new JobAccessListener(context);
    launch = new JobLaunch(context, access, new JobMetering(context, access));
  }

  /** A job as launch_job records it: accepted, nothing done yet. */
  function accepted(body: LaunchJobBody): LiveJob {
    const now = kit.clock.now().toISOString();
    const name = `ark-job-${body.job_id}`;
    const job = liveJob({
      version: JOB_RECORD_VERSION,
      job_id: body.job_id,
      fence: body.fence,
      phase: 'accepted',
      launch: body,
      accepted_at: now,
      updated_at: now,
      container_name: name,
      volume_name: name,
      outbox: [],
    });
    context.jobs.set(body.job_id, job);
    return job;
  }

  async function launched(body: LaunchJobBody): Promise<LiveJob> {
    const job = accepted(body);
    launch.start(job);
    await job.launch?.done;
    return job;
  }

  beforeEach(() => setUp());

  afterEach(async () => {
    context.lifecycle.closing = true;
    for (const job of context.jobs.values()) await job.ssh?.close();
    expect(kit.channel.invalid).toEqual([]);
    await kit.cleanup();
  });

  it('pulls by digest, creates and starts the container, opens SSH and reports ready; the meter starts then', async () => {
    await kit.clock.advance(1_000);
    const body = kit.launchBody();
    const job = await launched(body);
    expect(kit.channel.story()).toEqual(['pulling', 'pulling', 'starting', 'ready']);
    expect(kit.channel.statuses().map((status) => status.progress_pct)).toEqual([0, 100, undefined, undefined]);
    const spec = kit.runtime.specOf(`ark-job-${body.job_id}`) as ContainerSpec;
    expect(spec).toMatchObject({
      image: kit.runtime.answers.image.reference,
      labels: { 'ark.job_id': body.job_id, 'ark.fence': '1', 'ark.managed-by': 'ark-agent' },
      env: { SECRET_TOKEN: 'do-not-leak-this' },
      command: body.command,
      volumeName: `ark-job-${body.job_id}`,
      volumeMountPath: '/workspace',
      networkMode: 'host',
      portBindings: [],
      gpuDeviceIds: [],
    });
    const ready = kit.channel.statuses().at(-1);
    expect(ready).toMatchObject({ at: at(1_000), evidence: { container_running: true, readiness_attempts: 1, readiness_ms: 0 } });
    expect(ready?.access?.ssh_port).toBe(job.record.ssh_port);
    expect(ready?.access?.ssh_host_key_fingerprint).toMatch(/^SHA256:/);
    expect(job.record).toMatchObject({ phase: 'ready', ready_at: at(1_000), meter: { seq: 0, period_end: at(1_000), final_sent: false } });
    expect(job.ssh).toBeDefined();
    // The container started at the ready time, as Docker recorded it; the first meter tick is armed.
    expect((await kit.runtime.inspectContainer(job.record.container_id as string))?.startedAt?.toISOString()).toBe(at(1_000));
    expect(kit.clock.peek()).toBe(5_000);
    // A relaunch finds the image present: no second pull.
    await launched(kit.launchBody());
    expect(kit.runtime.callsOf('pullImage')).toHaveLength(2);
    expect(kit.channel.story().slice(4)).toEqual(['pulling', 'pulling', 'starting', 'ready']);
  });

  it("creates the container within the agent's limits, or the launch's where lower, in a sandbox runtime the engine has", async () => {
    const own = { nano_cpus: 3_000_000_000, memory_bytes: String(6 * 1024 ** 3), pids: 4096 };
    await setUp({ jobLimits: own, network: 'ark-jobs' });
    kit.runtime.isolation = { runtimes: ['runc', 'runsc'], defaultRuntime: 'runc', userNamespaceRemap: true, rootless: false };
    const body = kit.launchBody({ limits: { nano_cpus: 7_000_000_000, memory_bytes: String(2 * 1024 ** 3), pids: 8192 } });
    const job = await launched(body);
    const limits = { nano_cpus: 3_000_000_000, memory_bytes: String(2 * 1024 ** 3), pids: 4096 };
    expect(job.record.confinement).toEqual({ limits, isolation: 'gvisor+userns' });
    expect(kit.runtime.specOf(job.record.container_name)).toMatchObject({
      limits: { nanoCpus: 3_000_000_000, memoryBytes: 2 * 1024 ** 3, pids: 4096 },
      runtime: 'runsc',
      networkName: 'ark-jobs',
    });
    expect(kit.channel.statuses().at(-1)?.evidence).toMatchObject({
      isolation: 'gvisor+userns',
      limit_nano_cpus: 3_000_000_000,
      limit_memory_bytes: String(2 * 1024 ** 3),
      limit_pids: 4096,
    });
    // A second launch asks the engine again only after a while.
    await launched(kit.launchBody());
    expect(kit.runtime.callsOf('engineIsolation')).toHaveLength(1);
  });

  it('fails a launch whose host named a runtime the engine does not have, before any container is made', async () => {
    await setUp({ jobLimits: { nano_cpus: 1_000_000_000, memory_bytes: String(1024 ** 3), pids: 512 }, jobRuntime: 'kata-fc' });
    const job = await launched(kit.launchBody());
    expect(kit.channel.statuses().at(-1)).toMatchObject({
      status: 'failed',
      detail: expect.stringMatching(/^job_runtime kata-fc is not registered with the Docker engine/),
    });
    expect(job.record.phase).toBe('failed');
    expect(kit.runtime.callsOf('createContainer')).toEqual([]);
  });

  it('runs the job-start identity check before any container is made, and fails the launch with its problem', async () => {
    const checked: Array<[string, readonly string[]]> = [];
    let problem: string | undefined;
    await setUp({
      startCheck: async (jobId, pci) => {
        checked.push([jobId, pci]);
        return problem;
      },
    });
    const passing = kit.launchBody();
    expect((await launched(passing)).record.phase).toBe('ready');
    expect(checked).toEqual([[passing.job_id, []]]);
    problem = 'GPU identity check failed: assigned GPU 0000:3b:00.0 not found by nvidia-smi (it lists none)';
    const failing = kit.launchBody({ gpu_pci_addresses: ['0000:3b:00.0'] });
    const job = await launched(failing);
    expect(checked.at(-1)).toEqual([failing.job_id, ['0000:3b:00.0']]);
    expect(kit.channel.statuses().at(-1)).toMatchObject({
      job_id: failing.job_id,
      status: 'failed',
      detail: expect.stringContaining(problem),
    });
    expect(job.record.phase).toBe('failed');
    expect(kit.runtime.specOf(job.record.container_name)).toBeUndefined();
  });

  it('creates a container without limits only when neither the agent nor the launch has any (before confinement)', async () => {
    const job = await launched(kit.launchBody());
    expect(kit.runtime.specOf(job.record.container_name)).not.toHaveProperty('limits');
    expect(job.record.confinement).toBeUndefined();
    expect(kit.runtime.callsOf('engineIsolation')).toEqual([]);
  });

  it('adds the engine key to the environment of a model template and asks for GPUs by device ID', async () => {
    await setUp({
      gpuInventory: { inventory: async () => ({ gpus: [{ pci_address: '0000:3b:00.0', model: 'NVIDIA L4', uuid: 'GPU-1234' }] }) },
    });
    const body = kit.launchBody({ gpu_pci_addresses: ['3b:00.0'], engine_api_key: 'ek-0123456789', ports: [], health_check: undefined });
    const job = await launched(body);
    // A model template needs a port to ask for its models on: without one the launch fails, after the container was made.
    expect(job.record.phase).toBe('failed');
    expect(kit.channel.statuses().at(-1)?.detail).toBe('model template without a port to ask for its model list');
    expect(kit.runtime.specOf(job.record.container_name)).toMatchObject({
      env: { SECRET_TOKEN: 'do-not-leak-this', ARK_ENGINE_API_KEY: 'ek-0123456789' },
      gpuDeviceIds: ['GPU-1234'],
    });
    expect(kit.runtime.callsOf('stopContainer')).toEqual([[job.record.container_id, 10]]);
  });

  it('fails a launch naming GPUs without an inventory, an image not named by digest, or a digest the registry lacks', async () => {
    const gpus = await launched(kit.launchBody({ gpu_pci_addresses: ['3b:00.0'] }));
    expect(kit.channel.statuses(gpus.record.job_id).at(-1)).toMatchObject({
      status: 'failed',
      detail: 'GPUs were assigned but this agent has no GPU inventory',
    });
    const tagged = await launched(kit.launchBody({ image_digest: 'busybox:latest' }));
    expect(kit.channel.story(tagged.record.job_id)).toEqual(['failed']);
    expect(kit.channel.statuses(tagged.record.job_id)[0]?.detail).toBe('image busybox:latest is not named by a sha256 digest');
    const unknown = `${kit.runtime.answers.image.repository}@sha256:${'1'.repeat(64)}`;
    const missing = await launched(kit.launchBody({ image_digest: unknown }));
    expect(kit.channel.story(missing.record.job_id)).toEqual(['pulling', 'failed']);
    expect(kit.channel.statuses(missing.record.job_id)[1]?.detail).toMatch(/^image pull failed: manifest for .*@sha256:1{64} not found/);
    // None of them got as far as a container.
    expect(kit.runtime.callsOf('createContainer')).toEqual([]);
  });

  it('fails a container that exits before it is ready, quoting its output without the job secrets', async () => {
    await setUp({ readinessIntervalMs: 500 });
    const port = await closedPort();
    const body = kit.launchBody({ ports: [{ container_port: port, protocol: 'tcp' }], health_check: { port } });
    const job = accepted(body);
    launch.start(job);
    // Nothing answers on the health port: readiness waits on the clock between attempts.
    await until(() => kit.clock.pendingTimers === 1, 'the readiness wait');
    kit.runtime.exitOnItsOwn(job.record.container_name);
    await kit.clock.advance(500);
    await job.launch?.done;
    const failed = kit.channel.statuses().at(-1);
    expect(failed).toMatchObject({ status: 'failed', exit_code: 3 });
    expect(failed?.detail).toBe('the container exited with code 3 before it was ready; last output:\nto stderr\nboom [redacted]');
    expect(job.record).toMatchObject({ phase: 'failed', exit_code: 3 });
    expect(job.ssh).toBeUndefined();
    expect(kit.channel.receipts()).toEqual([]);
  });

  it('gives up when readiness is not verified within its bound, counted on the clock', async () => {
    await setUp({ readinessTimeoutMs: 2_000, readinessIntervalMs: 500 });
    const port = await closedPort();
    const job = accepted(kit.launchBody({ ports: [{ container_port: port, protocol: 'tcp' }], health_check: { port, path: '/health' } }));
    launch.start(job);
    let waits = 0;
    const failed = () => job.record.phase === 'failed';
    while (!failed()) {
      await until(() => kit.clock.pendingTimers === 1 || failed(), 'the next readiness wait');
      if (failed()) break;
      await kit.clock.advance(500);
      waits += 1;
    }
    await job.launch?.done;
    expect(waits).toBe(4);
    expect(kit.channel.statuses().at(-1)?.detail).toBe(`not ready within 2 s: http ${port}/health: ECONNREFUSED`);
    // Nothing runs unpaid: the container is stopped with the grace, kept for diagnosis.
    expect(kit.runtime.callsOf('stopContainer')).toEqual([[job.record.container_id, 10]]);
    expect((await kit.runtime.inspectContainer(job.record.container_id as string))?.exitCode).toBe(137);
  });

  it('abandons a launch whose signal aborts, leaving the phase to whoever aborted it', async () => {
    await setUp({ readinessIntervalMs: 500 });
    const port = await closedPort();
    const job = accepted(kit.launchBody({ ports: [{ container_port: port, protocol: 'tcp' }], health_check: { port } }));
    launch.start(job);
    await until(() => kit.clock.pendingTimers === 1, 'the readiness wait');
    job.launch?.controller.abort();
    await job.launch?.done;
    expect(job.record.phase).toBe('starting');
    expect(kit.channel.story()).toEqual(['pulling', 'pulling', 'starting']);
    expect(kit.clock.pendingTimers).toBe(0);
  });
});
