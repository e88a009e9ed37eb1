import { EventEmitter } from 'node:events';
import type { CommandMessage } from '@ark/shared/channel/messages';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { Agent } from './agent.js';
import type { AgentChannel, HeartbeatBody, ReliableBody } from './agent-ports.js';
import type { AgentStatusReport } from './state.js';

const MACHINE = '3f1c6a3e-2b7d-4a59-9c1e-0d5b8e6f7a21';

/** A narrow stand-in for the channel client: records what the agent hands it. */
class RecordingChannel extends EventEmitter implements AgentChannel {
  connected = true;
  heartbeats: HeartbeatBody[] = [];
  enqueued: ReliableBody[] = [];
  started = 0;
  stopped = 0;
  start() {
    this.started += 1;
  }
  stop() {
    this.stopped += 1;
  }
  sendHeartbeat(body: HeartbeatBody) {
    this.heartbeats.push(body);
  }
  enqueue(body: ReliableBody) {
    this.enqueued.push(body);
  }
  status() {
    return { connected: this.connected, queued: this.enqueued.length };
  }
}

const logger = { info: vi.fn(), warn: vi.fn(), error: vi.fn() };

type AgentOptionsOf = ConstructorParameters<typeof Agent>[0];
function build(
  overrides: {
    problems?: string[];
    commandHandlers?: AgentOptionsOf['commandHandlers'];
    createSelftest?: AgentOptionsOf['createSelftest'];
    createJobs?: AgentOptionsOf['createJobs'];
  } = {},
) {
  const channel = new RecordingChannel();
  const reports: AgentStatusReport[] = [];
  let onCommand: ((command: CommandMessage) => Promise<void>) | undefined;
  const agent = new Agent({
    machineId: MACHINE,
    agentVersion: '0.1.0',
    describe: { control_plane_url: 'http://127.0.0.1:1' },
    createChannel: (handlers) => {
      onCommand = handlers.onCommand;
      return channel;
    },
    gpu: { sample: async () => [{ pci_address: '0000:01:00.0', temperature_c: 40 }] },
    host: { sample: async () => ({ cpu_utilization_pct: 1 }) },
    heartbeatIntervalMs: 15_000,
    telemetrySampleIntervalMs: 10_000,
    telemetryBatchIntervalMs: 60_000,
    telemetryBufferSamples: 100,
    nettestBounds: { maxDownloadBytes: 1000, maxUploadBytes: 1000, pingCount: 1 },
    measureNetwork: async () => ({ duration_ms: 10, latency_ms: 1, download_mbps: 100, upload_mbps: 50 }),
    checkHealth: async () => overrides.problems ?? [],
    commandHandlers: overrides.commandHandlers,
    ...(overrides.createSelftest === undefined ? {} : { createSelftest: overrides.createSelftest }),
    ...(overrides.createJobs === undefined ? {} : { createJobs: overrides.createJobs }),
    writeStatus: async (report) => void reports.push(structuredClone(report)),
    logger,
    pid: 4242,
  });
  return { agent, channel, reports, command: (command: CommandMessage) => (onCommand as (c: CommandMessage) => Promise<void>)(command) };
}

const nettestCommand: CommandMessage = {
  v: 1,
  t: 'command',
  sid: 's',
  seq: 2,
  command_seq: 1,
  command_id: '00000000-0000-4000-8000-000000000001',
  kind: 'run_nettest',
  body: { endpoint: 'http://127.0.0.1:1/api/v1/nettest', timeout_ms: 5000, download_bytes: 1000, upload_bytes: 1000 },
};

describe('Agent', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: new Date('2025-01-01T00:00:00.000Z') });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('heartbeats every interval with its uptime and health', async () => {
    const { agent, channel } = build();
    await agent.start();
    expect(channel.started).toBe(1);
    expect(channel.heartbeats).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(15_000);
    await vi.advanceTimersByTimeAsync(15_000);
    expect(channel.heartbeats).toEqual([
      { t: 'heartbeat', at: '2025-01-01T00:00:15.000Z', uptime_s: 15, healthy: true, problems: [], running_jobs: [] },
      { t: 'heartbeat', at: '2025-01-01T00:00:30.000Z', uptime_s: 30, healthy: true, problems: [], running_jobs: [] },
    ]);
    await agent.stop();
  });

  it('reports itself unhealthy with the problems it found', async () => {
    const { agent, channel, reports } = build({ problems: ['docker engine unreachable at /var/run/docker.sock: ENOENT'] });
    await agent.start();
    await agent.heartbeat();
    expect(channel.heartbeats[0]).toMatchObject({
      healthy: false,
      problems: ['docker engine unreachable at /var/run/docker.sock: ENOENT'],
    });
    expect(reports.at(-1)).toMatchObject({ healthy: false });
    await agent.stop();
  });

  it('logs a problem at start and when it appears, again only every five minutes while it lasts, and when it clears', async () => {
    const problem = 'docker engine unreachable at /run/user/1000/docker.sock: ECONNREFUSED';
    const problems: string[] = [problem];
    const { agent } = build({ problems });
    logger.warn.mockClear();
    logger.info.mockClear();
    const warned = () => logger.warn.mock.calls.filter(([, message]) => String(message).includes(problem));
    await agent.start();
    expect(warned()).toHaveLength(1);
    expect(warned()[0]?.[1]).toBe(`not healthy: ${problem}`);
    // Twenty heartbeats in five minutes: no line each.
    await vi.advanceTimersByTimeAsync(4 * 60_000);
    expect(warned()).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(warned()).toHaveLength(2);
    expect(warned()[1]?.[0]).toMatchObject({ problem, repeated: true });
    problems.length = 0;
    await vi.advanceTimersByTimeAsync(15_000);
    expect(logger.info).toHaveBeenCalledWith({ problem }, `healthy again: ${problem} is gone`);
    await agent.stop();
  });

  it('samples every interval and sends one batch per batch interval', async () => {
    const { agent, channel } = build();
    await agent.start();
    await vi.advanceTimersByTimeAsync(60_000);
    const batches = channel.enqueued.filter((body) => body.t === 'telemetry');
    expect(batches).toHaveLength(1);
    // The sample at start plus one every 10 s; the one due at 60 s races the flush due at the same instant.
    const samples = batches.flatMap((batch) => (batch.t === 'telemetry' ? batch.samples : []));
    expect(samples.length).toBeGreaterThanOrEqual(6);
    expect(samples[0]).toEqual({
      at: '2025-01-01T00:00:00.000Z',
      host: { cpu_utilization_pct: 1 },
      devices: [{ pci_address: '0000:01:00.0', temperature_c: 40 }],
    });
    await agent.stop();
  });

  it('answers a run_nettest command with a receipt, without holding up the command', async () => {
    const { agent, channel, command } = build();
    await agent.start();
    await command(nettestCommand);
    await vi.advanceTimersByTimeAsync(0);
    expect(channel.enqueued.filter((body) => body.t === 'nettest_receipt')).toEqual([
      {
        t: 'nettest_receipt',
        command_id: nettestCommand.command_id,
        measured_at: '2025-01-01T00:00:00.000Z',
        duration_ms: 10,
        latency_ms: 1,
        download_mbps: 100,
        upload_mbps: 50,
      },
    ]);
    expect(agent.report().last_nettest).toMatchObject({ command_id: nettestCommand.command_id, download_mbps: 100 });
    await agent.stop();
  });

  it('hands run_selftest to the self-test, whose hardware_receipt goes to the reliable queue, and the job runtime gets it too', async () => {
    const submitted: Array<[string, unknown]> = [];
    let jobsGot: unknown;
    const selftest = {
      submit: (commandId: string, body: unknown) => void submitted.push([commandId, body]),
      checkJobStart: async () => undefined,
      idle: async () => undefined,
      lastReceipt: () => undefined,
    };
    const { agent, channel, command } = build({
      createSelftest: (enqueue) => {
        void enqueue({ t: 'hardware_receipt', receipt: '{}', signature: 'x'.repeat(86).concat('==') });
        return selftest;
      },
      createJobs: (_port, given) => {
        jobsGot = given;
        return { start: async () => undefined, handleCommand: async () => undefined, runningJobs: () => [], close: async () => undefined };
      },
    });
    await agent.start();
    const body = { trigger: 'command', timeout_ms: 60_000 } as const;
    await command({ ...nettestCommand, kind: 'run_selftest', body } as CommandMessage);
    expect(submitted).toEqual([[nettestCommand.command_id, body]]);
    expect(jobsGot).toBe(selftest);
    expect(channel.enqueued.filter((queued) => queued.t === 'hardware_receipt')).toHaveLength(1);
    expect(agent.report().last_selftest).toBeNull();
    await agent.stop();
  });

  it('passes other commands to their handlers and ignores kinds it cannot run', async () => {
    const launched: CommandMessage[] = [];
    const { agent, command } = build({ commandHandlers: { stop_job: async (c) => void launched.push(c) } });
    await agent.start();
    const stop = {
      ...nettestCommand,
      kind: 'stop_job',
      body: { job_id: MACHINE, fence: '1', reason: 'r', retrieval_window_s: 0 },
    } as CommandMessage;
    await command(stop);
    expect(launched).toEqual([stop]);
    await command({ ...nettestCommand, kind: 'clean_job', body: { job_id: MACHINE, fence: '1' } } as CommandMessage);
    expect(logger.warn).toHaveBeenCalledWith(expect.objectContaining({ kind: 'clean_job' }), expect.stringMatching(/not supported/));
    await agent.stop();
  });

  it('refreshes the status report when the channel connects, disconnects or is acknowledged', async () => {
    const { agent, channel, reports } = build();
    await agent.start();
    const before = reports.length;
    channel.connected = false;
    channel.emit('disconnected');
    await vi.advanceTimersByTimeAsync(0);
    expect(reports.at(-1)).toMatchObject({ channel: { connected: false } });
    channel.connected = true;
    channel.emit('connected');
    channel.emit('ack');
    await vi.advanceTimersByTimeAsync(0);
    expect(reports.at(-1)).toMatchObject({ channel: { connected: true } });
    // Events that arrive during a write fold into one more write, not one each.
    expect(reports.length - before).toBeGreaterThanOrEqual(2);
    expect(reports.length - before).toBeLessThanOrEqual(3);
    await agent.stop();
  });

  it('stops cleanly: timers end, buffered samples go to the channel, the final status says so', async () => {
    const { agent, channel, reports } = build();
    await agent.start();
    await vi.advanceTimersByTimeAsync(25_000);
    expect(channel.enqueued).toHaveLength(0);
    await agent.stop();
    expect(channel.stopped).toBe(1);
    const samples = channel.enqueued.flatMap((body) => (body.t === 'telemetry' ? body.samples : []));
    expect(samples).toHaveLength(3);
    const final = reports.at(-1) as AgentStatusReport;
    expect(final).toMatchObject({
      pid: 4242,
      machine_id: MACHINE,
      control_plane_url: 'http://127.0.0.1:1',
      stopped_at: '2025-01-01T00:00:25.000Z',
      telemetry: { samples_taken: 3, samples_enqueued: 3, buffered: 0 },
      channel: { connected: true },
    });
    const heartbeatsAtStop = channel.heartbeats.length;
    await vi.advanceTimersByTimeAsync(120_000);
    expect(channel.heartbeats).toHaveLength(heartbeatsAtStop);
    expect(vi.getTimerCount()).toBe(0);
    // A second stop is the same stop.
    await agent.stop();
    expect(channel.stopped).toBe(1);
  });
});
