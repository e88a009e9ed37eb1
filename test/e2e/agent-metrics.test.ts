// The agent's own Prometheus endpoint over real processes: a control plane, `ark-agent pair` approved over HTTP,
// `ark-agent run` with ARK_AGENT_METRICS_LISTEN on a loopback port, scraped with fetch. The channel runs through a
// loopback TCP relay, so the test can cut the connection and watch the agent count its reconnect. nvidia-smi points
// at a binary that does not exist, so each sample is a GPU collector error. A non-loopback address is refused at
// start. The agent's metrics do not touch the store, so this runs on SQLite only.
import { rmSync } from 'node:fs';
import { type Server, type Socket, connect, createServer } from 'node:net';
import { dirname } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SpawnedProcess, freePort, spawnProcess } from '../harness/processes.js';
import {
  type AgentSetup,
  type ControlPlane,
  agentBin,
  agentSetup,
  api,
  hostSession,
  pairAgent,
  repoRoot,
  startAgent,
  startControlPlane,
  waitWhileRunning,
} from './host-side-helpers.js';

/** A loopback TCP relay to the control plane whose open connections can be cut at once. */
async function startRelay(targetPort: number): Promise<{ port: number; cutAll: () => void; close: () => Promise<void> }> {
  const open = new Set<Socket>();
  const server: Server = createServer((client) => {
    const target = connect(targetPort, '127.0.0.1');
    for (const socket of [client, target]) {
      open.add(socket);
      socket.on('close', () => open.delete(socket));
    }
    const end = () => {
      client.destroy();
      target.destroy();
    };
    client.pipe(target);
    target.pipe(client);
    for (const socket of [client, target]) {
      socket.on('error', end);
      socket.on('close', end);
    }
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const cutAll = () => {
    for (const socket of open) socket.destroy();
  };
  return {
    port,
    cutAll,
    close: () =>
      new Promise((resolve) => {
        cutAll();
        server.close(() => resolve());
      }),
  };
}

/** The value of one sample line (`name{labels} value`) of a Prometheus exposition; undefined when absent. */
function sample(text: string, series: string): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    if (line.slice(0, space) === series) return Number(line.slice(space + 1));
  }
  return undefined;
}

describe('the agent metrics endpoint over real processes', () => {
  let cp: ControlPlane;
  let relay: Awaited<ReturnType<typeof startRelay>>;
  let token: string;
  let setup: AgentSetup;
  let agent: SpawnedProcess | undefined;
  let metricsPort: number;

  beforeAll(async () => {
    const cpPort = await freePort();
    relay = await startRelay(cpPort);
    // The channel URL handed out at enrollment goes through the relay; pairing talks to the control plane directly.
    cp = await startControlPlane({ port: cpPort, env: { ARK_PUBLIC_URL: `http://127.0.0.1:${relay.port}` } });
    token = await hostSession(cp);
    metricsPort = await freePort();
    setup = agentSetup(
      {
        heartbeat_interval_s: 1,
        telemetry_sample_interval_s: 1,
        telemetry_batch_interval_s: 2,
        require_docker: false,
        min_disk_free_bytes: 0,
        nvidia_smi_path: '/nonexistent/nvidia-smi',
      },
      { ARK_AGENT_METRICS_LISTEN: `127.0.0.1:${metricsPort}`, ARK_AGENT_LOG_LEVEL: 'info' },
    );
  }, 120_000);

  afterAll(async () => {
    await agent?.stop('SIGTERM');
    await cp?.process.stop('SIGTERM');
    await relay?.close();
    if (setup !== undefined) rmSync(dirname(setup.stateDir), { recursive: true, force: true });
    if (cp !== undefined) rmSync(cp.dataDir, { recursive: true, force: true });
  });

  it('refuses a non-loopback metrics address unless it is explicitly allowed', { timeout: 60_000 }, async () => {
    const run = async (listen: string) => {
      const child = spawnProcess(process.execPath, [agentBin, 'run'], {
        cwd: repoRoot,
        env: { ...setup.env, ARK_AGENT_METRICS_LISTEN: listen },
      });
      const exit = await child.exited;
      return { code: exit.code, output: child.output() };
    };
    const refused = await run('0.0.0.0:9464');
    expect(refused.code).toBe(2);
    expect(refused.output).toContain('metrics_listen 0.0.0.0:9464 is not a loopback address');
    expect(refused.output).toContain('environment variable ARK_AGENT_METRICS_LISTEN');
    const malformed = await run('127.0.0.1');
    expect(malformed.code).toBe(2);
    expect(malformed.output).toContain('metrics_listen must be host:port');
  });

  it('serves jobs, channel, queue and collector figures that follow the running agent', { timeout: 180_000 }, async () => {
    const { machineId } = await pairAgent(cp, token, setup);
    agent = startAgent(setup, ['run']);
    const daemon = agent;
    const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    const scrape = async () => {
      const response = await fetch(metricsUrl);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toContain('text/plain');
      return response.text();
    };
    await waitWhileRunning(
      daemon,
      async () => (await api(cp.base, 'GET', `/api/v1/hosts/machines/${machineId}`, { token })).body?.live === 'live',
      { timeoutMs: 60_000, intervalMs: 300, description: 'the machine to go live' },
    );

    // Connected, heartbeating, and counting the missing nvidia-smi as GPU collector errors.
    const first = await waitWhileRunning(
      daemon,
      async () => {
        const text = await scrape();
        return sample(text, 'ark_agent_channel_connected') === 1 && (sample(text, 'ark_agent_heartbeats_sent_total') ?? 0) >= 2
          ? text
          : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 300, description: 'a connected channel and two heartbeats on /metrics' },
    );
    expect(sample(first, 'ark_agent_jobs_running')).toBe(0);
    expect(sample(first, 'ark_agent_jobs_started_total')).toBe(0);
    expect(sample(first, 'ark_agent_jobs_failed_total')).toBe(0);
    expect(sample(first, 'ark_agent_channel_reconnects_total')).toBe(0);
    expect(sample(first, 'ark_agent_channel_reconnect_attempts')).toBe(0);
    expect(sample(first, 'ark_agent_resend_queue_depth')).toBeGreaterThanOrEqual(0);
    expect(sample(first, 'ark_agent_collector_errors_total{collector="gpu"}')).toBeGreaterThanOrEqual(1);
    expect(sample(first, 'ark_agent_image_pull_bytes_total')).toBe(0);
    expect(sample(first, 'ark_agent_process_resident_memory_bytes')).toBeGreaterThan(10 * 1024 * 1024);
    expect(first).toContain('# TYPE ark_agent_image_pull_duration_seconds histogram');

    // Time passes: heartbeats and collector errors go up.
    const later = await waitWhileRunning(
      daemon,
      async () => {
        const text = await scrape();
        const heartbeats = sample(text, 'ark_agent_heartbeats_sent_total') ?? 0;
        const errors = sample(text, 'ark_agent_collector_errors_total{collector="gpu"}') ?? 0;
        return heartbeats >= (sample(first, 'ark_agent_heartbeats_sent_total') ?? 0) + 2 &&
          errors > (sample(first, 'ark_agent_collector_errors_total{collector="gpu"}') ?? 0)
          ? text
          : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 300, description: 'more heartbeats and collector errors' },
    );
    expect(sample(later, 'ark_agent_channel_connected')).toBe(1);

    // The connection is cut: the agent reports it down, reconnects through the relay, and counts the reconnect.
    relay.cutAll();
    await waitWhileRunning(
      daemon,
      async () => {
        const text = await scrape();
        return (
          sample(text, 'ark_agent_channel_reconnects_total') === 1 &&
          sample(text, 'ark_agent_channel_connected') === 1 &&
          (sample(text, 'ark_agent_channel_reconnect_attempts') ?? 0) >= 1
        );
      },
      { timeoutMs: 60_000, intervalMs: 200, description: 'the agent to reconnect and count it' },
    );

    // Anything but GET /metrics is not served.
    const other = await fetch(`http://127.0.0.1:${metricsPort}/`);
    expect(other.status).toBe(404);
    await other.text();

    // The endpoint closes with the agent.
    await daemon.stop('SIGTERM');
    agent = undefined;
    await expect(fetch(metricsUrl)).rejects.toThrow();
  });
});
