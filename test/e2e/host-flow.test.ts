// The host's path end to end, over real processes, on each store: a control plane, a host account made with its
// CLI, `ark-agent pair` approved over HTTP, `ark-agent run` going live, telemetry in buckets, a network test
// against the control plane's own endpoint, and a control-plane restart that the agent rides out: it reconnects,
// resends what was not acknowledged, and no sample is counted twice.
import { rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../harness/postgres.js';
import type { SpawnedProcess } from '../harness/processes.js';
import {
  type AgentSetup,
  type ControlPlane,
  agentSetup,
  agentStatus,
  api,
  hostSession,
  nvidiaSmiFixture,
  pairAgent,
  startAgent,
  startControlPlane,
  waitWhileRunning,
} from './host-side-helpers.js';

const DIALECTS = ['sqlite', 'postgres'] as const;

/** The fixture's two L4 cards, as the agent reports them. */
const FIXTURE_PCI_ADDRESSES = ['0000:01:00.0', '0000:c1:00.0'];

const sumSamples = (buckets: Array<{ samples: number }>) => buckets.reduce((total, bucket) => total + bucket.samples, 0);

describe.each(DIALECTS)('host flow over real processes on %s', (dialect) => {
  let database: TestDatabase | undefined;
  let cp: ControlPlane;
  let token: string;
  let setup: AgentSetup;
  let agent: SpawnedProcess | undefined;

  beforeAll(async () => {
    if (dialect === 'postgres') database = await createTestDatabase();
    cp = await startControlPlane({ databaseUrl: database?.url ?? null });
    token = await hostSession(cp);
    // Short intervals so the test sees several heartbeats and batches in seconds; no Docker here, so the agent is
    // told not to require it; GPUs come from a recorded nvidia-smi document.
    setup = agentSetup(
      {
        heartbeat_interval_s: 2,
        telemetry_sample_interval_s: 1,
        telemetry_batch_interval_s: 2,
        require_docker: false,
        min_disk_free_bytes: 0,
      },
      { ARK_AGENT_NVIDIA_SMI_FIXTURE: nvidiaSmiFixture, ARK_AGENT_LOG_LEVEL: 'info' },
    );
  });

  afterAll(async () => {
    await agent?.stop('SIGTERM');
    await cp?.process.stop('SIGTERM');
    await database?.drop();
    if (setup !== undefined) rmSync(dirname(setup.stateDir), { recursive: true, force: true });
    if (cp !== undefined) rmSync(cp.dataDir, { recursive: true, force: true });
  });

  it('pairs, goes live, reports telemetry, answers a nettest and survives a control-plane restart', { timeout: 240_000 }, async () => {
    // Pair: the user code from the agent's output, approved over HTTP by the host.
    const { machineId } = await pairAgent(cp, token, setup);
    const identityFile = join(setup.stateDir, 'identity.json');
    expect(statSync(identityFile).mode & 0o777).toBe(0o600);
    expect(statSync(setup.stateDir).mode & 0o777).toBe(0o700);
    const paired = await agentStatus(setup);
    expect(paired).toMatchObject({ paired: true, machine_id: machineId, control_plane_url: cp.base, daemon: { running: false } });

    // Run: the machine goes live on its first healthy heartbeat.
    agent = startAgent(setup, ['run']);
    const daemon = agent;
    const machine = await waitWhileRunning(
      daemon,
      async () => {
        const answer = await api(cp.base, 'GET', `/api/v1/hosts/machines/${machineId}`, { token });
        return answer.status === 200 && answer.body.live === 'live' ? answer.body : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 250, description: 'the machine to go live' },
    ).catch((error: Error) => {
      throw new Error(`${error.message}\n--- agent ---\n${daemon.output()}\n--- control plane ---\n${cp.process.output()}`);
    });
    expect(machine).toMatchObject({ machine_id: machineId, liveness: 'online', healthy: true, problems: [] });
    expect(machine.manifest.gpus.map((gpu: { pci_address: string }) => gpu.pci_address).sort()).toEqual(FIXTURE_PCI_ADDRESSES);

    // Telemetry: buckets with the host figures and both fixture GPUs.
    const telemetry = async () => {
      const answer = await api(cp.base, 'GET', `/api/v1/hosts/machines/${machineId}/telemetry?window=1h`, { token });
      if (answer.status !== 200) throw new Error(`telemetry answered ${answer.status}: ${JSON.stringify(answer.body)}`);
      return answer.body as {
        buckets: Array<{ samples: number; devices: Array<{ pci_address: string }>; host?: Record<string, unknown> }>;
      };
    };
    const firstBuckets = await waitWhileRunning(
      daemon,
      async () => {
        const { buckets } = await telemetry();
        return sumSamples(buckets) >= 3 ? buckets : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 500, description: 'telemetry buckets' },
    );
    const lastBucket = firstBuckets.at(-1);
    expect(lastBucket?.devices.map((device) => device.pci_address).sort()).toEqual(FIXTURE_PCI_ADDRESSES);
    expect(lastBucket?.host).toHaveProperty('cpu_utilization_pct');

    // Nettest: queued over HTTP, measured by the agent against the control plane's endpoint, facts updated.
    const queued = await api(cp.base, 'POST', `/api/v1/hosts/machines/${machineId}/nettest`, { token, idempotent: true });
    expect(queued.status).toBe(202);
    expect(queued.body).toMatchObject({ machine_id: machineId, state: 'QUEUED' });
    const network = await waitWhileRunning(
      daemon,
      async () => {
        const answer = await api(cp.base, 'GET', `/api/v1/hosts/machines/${machineId}`, { token });
        return answer.body.network ?? undefined;
      },
      { timeoutMs: 45_000, intervalMs: 250, description: 'the network facts' },
    );
    expect(network.error).toBeNull();
    expect(network.download_mbps).toBeGreaterThan(0);
    expect(network.upload_mbps).toBeGreaterThan(0);
    expect(network.latency_ms).toBeGreaterThanOrEqual(0);
    const afterNettest = await agentStatus(setup);
    expect(afterNettest.report.last_nettest).toMatchObject({ command_id: queued.body.command_id });

    // Restart: the control plane stops; the agent keeps sampling and queueing batches it cannot deliver.
    const exit = await cp.process.stop('SIGTERM');
    expect(exit.code).toBe(0);
    const whileDown = await waitWhileRunning(
      daemon,
      async () => {
        const status = await agentStatus(setup);
        const channel = status.report?.channel ?? {};
        return channel.connected === false && unacknowledged(channel) > 0 ? status : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 500, description: 'the agent to notice the outage and hold unacknowledged telemetry' },
    );
    expect(whileDown.daemon.running).toBe(true);
    cp = await startControlPlane({ port: cp.port, dataDir: cp.dataDir, databaseUrl: database?.url ?? null });

    // Reconnected: everything queued while the control plane was down is delivered, and each sample counted once.
    let last: { counted: number; produced: number; queuedBefore: number; queuedAfter: number; reconnects: number } | undefined;
    const settled = await waitWhileRunning(
      daemon,
      async () => {
        const before = await agentStatus(setup);
        const { buckets } = await telemetry();
        const after = await agentStatus(setup);
        const produced = before.report.telemetry.samples_enqueued as number;
        last = {
          counted: sumSamples(buckets),
          produced,
          queuedBefore: unacknowledged(before.report.channel),
          queuedAfter: unacknowledged(after.report.channel),
          reconnects: after.report.channel.reconnects,
        };
        const stable = before.report.channel.connected === true && last.queuedBefore === 0 && last.queuedAfter === 0;
        return stable && after.report.telemetry.samples_enqueued === produced && last.counted === produced ? last : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500, description: 'delivered telemetry to match what the agent produced' },
    ).catch((error: Error) => {
      throw new Error(`${error.message}; last observation ${JSON.stringify(last)}\n--- agent ---\n${daemon.output()}`);
    });
    expect(settled.counted).toBe(settled.produced);
    expect(settled.reconnects).toBeGreaterThanOrEqual(1);
    expect(settled.produced).toBeGreaterThan(sumSamples(firstBuckets));

    const liveAgain = await api(cp.base, 'GET', `/api/v1/hosts/machines/${machineId}`, { token });
    expect(liveAgain.body).toMatchObject({ live: 'live', liveness: 'online' });

    // Clean shutdown on SIGTERM: exit 0, final report written, daemon no longer running.
    const stopped = await daemon.stop('SIGTERM');
    expect(stopped).toEqual({ code: 0, signal: null });
    const final = await agentStatus(setup);
    expect(final.daemon.running).toBe(false);
    expect(final.report.stopped_at).toEqual(expect.any(String));
  });
});

/** Messages the channel holds that the control plane has not acknowledged. */
function unacknowledged(channel: Record<string, unknown> | undefined): number {
  const value = channel?.queued ?? channel?.unacked;
  return typeof value === 'number' ? value : Number.NaN;
}
