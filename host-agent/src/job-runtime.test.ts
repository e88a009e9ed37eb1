import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compileChannelSchema, JobStatusMessage, type CommandMessage, type LaunchJobBody } from '@ark/shared';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Agent } from './agent.js';
import type { AgentChannel, AgentJobs, HeartbeatBody, ReliableBody } from './agent-ports.js';
import { loadAgentConfig } from './config.js';
import { checkHealth } from './health.js';
import { createJobRuntime, withPublicHost } from './job-runtime.js';

const MACHINE = '3f1c6a3e-2b7d-4a59-9c1e-0d5b8e6f7a21';
const statusCheck = compileChannelSchema(JobStatusMessage);
const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

/** Records what the agent hands the channel, in order; `events` interleaves it with the job runtime's calls. */
class RecordingChannel implements AgentChannel {
  heartbeats: HeartbeatBody[] = [];
  enqueued: ReliableBody[] = [];
  constructor(private readonly events: string[] = []) {}
  start() {
    this.events.push('channel.start');
  }
  stop() {
    this.events.push('channel.stop');
  }
  sendHeartbeat(body: HeartbeatBody) {
    this.heartbeats.push(body);
  }
  async enqueue(body: ReliableBody) {
    this.enqueued.push(structuredClone(body));
  }
  status() {
    return { connected: true };
  }
  statuses() {
    return this.enqueued.filter((body) => body.t === 'job_status');
  }
}

type LaunchCommand = Extract<CommandMessage, { kind: 'launch_job' }>;

function launchCommand(seq: number, body: Partial<LaunchJobBody> = {}): LaunchCommand {
  return {
    v: 1,
    t: 'command',
    sid: 's',
    seq,
    command_seq: seq,
    command_id: randomUUID(),
    kind: 'launch_job',
    body: {
      job_id: randomUUID(),
      fence: '1',
      image_digest: `127.0.0.1:5000/ark/job@sha256:${'a'.repeat(64)}`,
      gpu_pci_addresses: [],
      env: {},
      ports: [],
      ssh_public_keys: [],
      meter_interval_s: 30,
      ...body,
    },
  };
}

function buildAgent(
  channel: RecordingChannel,
  createJobs: ConstructorParameters<typeof Agent>[0]['createJobs'],
  health: () => Promise<string[]> = async () => [],
) {
  let onCommand: ((command: CommandMessage) => Promise<void>) | undefined;
  const agent = new Agent({
    machineId: MACHINE,
    agentVersion: '0.1.0',
    createChannel: (handlers) => {
      onCommand = handlers.onCommand;
      return channel;
    },
    gpu: { sample: async () => [] },
    host: { sample: async () => ({}) },
    heartbeatIntervalMs: 60_000,
    telemetrySampleIntervalMs: 60_000,
    telemetryBatchIntervalMs: 60_000,
    telemetryBufferSamples: 100,
    nettestBounds: { maxDownloadBytes: 1000, maxUploadBytes: 1000, pingCount: 1 },
    checkHealth: health,
    createJobs,
    writeStatus: async () => undefined,
    logger: quiet,
  });
  return { agent, command: (command: CommandMessage) => (onCommand as (command: CommandMessage) => Promise<void>)(command) };
}

async function until<T>(probe: () => T | undefined, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('the job runtime in the daemon', () => {
  let stateDir: string;
  beforeEach(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'ark-agent-jobs-'));
  });
  afterEach(async () => {
    await rm(stateDir, { recursive: true, force: true });
  });

  it('runs without a Docker engine: the heartbeat says so and a launch fails with a status naming the engine', async () => {
    const socketPath = join(stateDir, 'no-docker.sock');
    const config = loadAgentConfig({
      env: { ARK_AGENT_STATE_DIR: stateDir, ARK_AGENT_DOCKER_SOCKET: socketPath, ARK_AGENT_JOB_PORT_RANGE: '41000-41009' },
      readFile: () => null,
    });
    const channel = new RecordingChannel();
    const { agent, command } = buildAgent(
      channel,
      (port) => createJobRuntime({ config, channel: port, gpuInventory: { inventory: async () => ({ gpus: [] }) }, logger: quiet }),
      () => checkHealth({ docker: config.docker, diskPath: stateDir, minDiskFreeBytes: 0 }),
    );
    await agent.start();
    await agent.heartbeat();
    expect(channel.heartbeats.at(-1)?.healthy).toBe(false);
    expect(channel.heartbeats.at(-1)?.problems.join(' ')).toContain(`docker engine unreachable at ${socketPath}`);

    const launch = launchCommand(1);
    await command(launch);
    const failed = await until(
      () => channel.statuses().find((body) => body.t === 'job_status' && body.status === 'failed'),
      'the failed status',
    );
    expect(failed).toMatchObject({ job_id: launch.body.job_id, fence: '1' });
    expect((failed as { detail?: string }).detail).toContain(`the Docker engine at ${socketPath} is unreachable`);
    expect(channel.statuses().map((body) => (body.t === 'job_status' ? body.status : ''))).toEqual(['accepted', 'pulling', 'failed']);
    for (const body of channel.statuses()) expect(statusCheck.Check({ v: 1, sid: 's', seq: 1, id: 1, ...body })).toBe(true);
    await agent.heartbeat();
    expect(channel.heartbeats.at(-1)?.running_jobs).toEqual([]);
    await agent.stop();
  });

  it('starts the job runtime before job commands, reports its running jobs and closes it before the channel', async () => {
    const events: string[] = [];
    const channel = new RecordingChannel(events);
    let releaseStart: () => void = () => undefined;
    const running = [{ job_id: randomUUID(), fence: '2', container_state: 'running' }];
    const jobs: AgentJobs = {
      start: () =>
        new Promise<void>((resolve) => {
          events.push('jobs.start');
          releaseStart = () => {
            events.push('jobs.started');
            resolve();
          };
        }),
      handleCommand: async (received) => void events.push(`jobs.${received.kind}`),
      runningJobs: () => running,
      close: async () => void events.push('jobs.close'),
    };
    const { agent, command } = buildAgent(channel, () => jobs);
    const started = agent.start();
    // A command that arrives while the runtime is still loading its jobs waits for it.
    await until(() => (events.includes('jobs.start') ? true : undefined), 'the job runtime to start');
    const applied = command(launchCommand(1));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(events).toEqual(['channel.start', 'jobs.start']);
    releaseStart();
    await started;
    await applied;
    expect(events).toEqual(['channel.start', 'jobs.start', 'jobs.started', 'jobs.launch_job']);
    await agent.heartbeat();
    expect(channel.heartbeats.at(-1)?.running_jobs).toEqual(running);
    expect(agent.report()).toMatchObject({ running_jobs: running });

    const stopping = agent.stop();
    // A job command that arrives during shutdown is never recorded as applied: the next run receives it again.
    let settled = false;
    void command(launchCommand(2)).then(() => {
      settled = true;
    });
    await stopping;
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(settled).toBe(false);
    expect(events.slice(-2)).toEqual(['jobs.close', 'channel.stop']);
    expect(events.filter((event) => event === 'jobs.launch_job')).toHaveLength(1);
  });

  it('answers job commands with a status when the job runtime cannot start, and reports it unhealthy', async () => {
    const channel = new RecordingChannel();
    const jobs: AgentJobs = {
      start: async () => {
        throw new Error('state directory unreadable');
      },
      handleCommand: async () => {
        throw new Error('not reached');
      },
      runningJobs: () => [],
      close: async () => undefined,
    };
    const { agent, command } = buildAgent(channel, () => jobs);
    await agent.start();
    const launch = launchCommand(1);
    await command(launch);
    await command({
      ...launchCommand(2),
      kind: 'stop_job',
      body: { job_id: launch.body.job_id, fence: '1', reason: 'renter', retrieval_window_s: 0 },
    } as CommandMessage);
    expect(channel.statuses()).toMatchObject([
      { job_id: launch.body.job_id, fence: '1', status: 'failed', detail: 'job runtime unavailable: state directory unreadable' },
      { job_id: launch.body.job_id, fence: '1', status: 'stopped' },
    ]);
    await agent.heartbeat();
    expect(channel.heartbeats.at(-1)).toMatchObject({ healthy: false, problems: ['job runtime unavailable: state directory unreadable'] });
    await agent.stop();
  });

  it('adds the configured public host to statuses that carry access', () => {
    const ready = {
      t: 'job_status' as const,
      job_id: randomUUID(),
      fence: '1',
      status: 'ready' as const,
      at: new Date().toISOString(),
      access: { ssh_port: 40001, ssh_host_key_fingerprint: 'SHA256:x', ports: [] },
    };
    expect(withPublicHost(ready, 'rig-7.example.net')).toMatchObject({ access: { ssh_port: 40001, public_host: 'rig-7.example.net' } });
    expect(withPublicHost(ready, null)).toBe(ready);
    const accepted = { ...ready, status: 'accepted' as const, access: undefined };
    expect(withPublicHost(accepted, 'rig-7.example.net')).toBe(accepted);
  });
});
