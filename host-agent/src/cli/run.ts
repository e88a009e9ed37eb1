import { Agent } from '../agent.js';
import { checkHealth } from '../health.js';
import type { MetricsServer } from '../metrics/prometheus.js';
import { buildSelftestParts } from '../selftest/parts.js';
import { SelftestService } from '../selftest/selftest-service.js';
import { ensureStateDir, readIdentity, writeStatus } from '../state.js';
import { type CliContext, CliError } from './context.js';

/**
 * `ark-agent run`: the daemon. Connects the channel with the stored identity, heartbeats, samples and batches
 * telemetry, answers network tests, runs jobs on the local Docker engine, and on SIGTERM or SIGINT stops cleanly
 * (buffered telemetry and job messages go to the persistent queue, to be sent by the next run; job containers keep
 * running and the next run takes them over).
 */
export async function runCommand(ctx: CliContext): Promise<number> {
  const { config } = ctx;
  const identity = await readIdentity(config.stateDir);
  if (identity === null) {
    throw new CliError(`not paired yet (no identity in ${config.stateDir}); run \`ark-agent pair --control-plane URL\` first`);
  }
  await ensureStateDir(config.stateDir);
  const logger = ctx.createLogger('stdout');
  let agent: Agent | undefined;
  // The Prometheus endpoint, only when configured: its module (and prom-client) is imported here, never otherwise.
  let metrics: MetricsServer | undefined;
  if (config.metrics !== null) {
    const { startMetricsServer } = await import('../metrics/prometheus.js');
    try {
      metrics = await startMetricsServer({
        ...config.metrics,
        snapshot: () => {
          const report = agent?.report();
          if (report === undefined) return undefined;
          const channel = report.channel as { connected?: boolean; reconnects?: number; queued?: number };
          return {
            runningJobs: Array.isArray(report.running_jobs) ? report.running_jobs.length : 0,
            channel: { connected: channel.connected === true, reconnects: channel.reconnects ?? 0, queued: channel.queued ?? 0 },
          };
        },
      });
    } catch (error) {
      throw new CliError(`metrics endpoint ${config.metrics.host}:${config.metrics.port} could not listen: ${(error as Error).message}`);
    }
    logger.info({ metrics_listen: `${metrics.address.host}:${metrics.address.port}` }, 'metrics endpoint listening (GET /metrics)');
  }
  const hooks = metrics?.hooks;
  const gpu = await ctx.createGpuCollector(logger, hooks && (() => hooks.collectorError('gpu')));
  const host = ctx.createHostCollector(logger, hooks && (() => hooks.collectorError('host')));
  const createJobs = ctx.createJobs;
  const secretKey = new Uint8Array(Buffer.from(identity.secret_key, 'base64'));
  const selftestParts = buildSelftestParts({
    config,
    machineId: identity.machine_id,
    secretKey,
    identity: gpu,
    readMachineFacts: ctx.readMachineFacts,
    clock: ctx.clock,
    ...(ctx.createContainerRuntime === undefined ? {} : { runtime: ctx.createContainerRuntime() }),
    // The last network test's figures, when one was measured: the receipt carries what the agent knows.
    network: async () => {
      const last = agent?.report().last_nettest as {
        download_mbps?: number;
        upload_mbps?: number;
        latency_ms?: number;
        error?: string;
      } | null;
      if (last === null || last === undefined || last.error !== undefined) return undefined;
      return {
        ...(last.download_mbps === undefined ? {} : { download_mbps: last.download_mbps }),
        ...(last.upload_mbps === undefined ? {} : { upload_mbps: last.upload_mbps }),
        ...(last.latency_ms === undefined ? {} : { latency_ms: last.latency_ms }),
      };
    },
  });

  agent = new Agent({
    machineId: identity.machine_id,
    agentVersion: ctx.agentVersion,
    describe: { control_plane_url: identity.control_plane_url, channel_url: identity.channel_url },
    createChannel: ({ onCommand, onRelay, onLogs }) =>
      ctx.createChannel({
        url: identity.channel_url,
        machineId: identity.machine_id,
        secretKey,
        controlPlanePublicKey: identity.control_plane_public_key,
        stateDir: config.stateDir,
        agentVersion: ctx.agentVersion,
        onCommand,
        ...(onRelay === undefined ? {} : { onRelay }),
        ...(onLogs === undefined ? {} : { onLogs }),
        // A heartbeat as soon as the channel is up: a waiting machine goes live without waiting a full interval.
        onConnected: () => void agent?.heartbeat().catch((error: unknown) => logger.warn({ error: String(error) }, 'heartbeat failed')),
        logger,
        clock: ctx.clock,
      }),
    gpu,
    host,
    heartbeatIntervalMs: config.heartbeatIntervalMs,
    telemetrySampleIntervalMs: config.telemetrySampleIntervalMs,
    telemetryBatchIntervalMs: config.telemetryBatchIntervalMs,
    telemetryBufferSamples: config.telemetryBufferSamples,
    nettestBounds: config.nettest,
    ...(createJobs === undefined
      ? {}
      : {
          createJobs: (channel, selftest) =>
            createJobs({
              config,
              channel,
              gpuInventory: gpu,
              ...(selftest === undefined ? {} : { startCheck: (jobId, pci) => selftest.checkJobStart(jobId, pci) }),
              logger,
              clock: ctx.clock,
              ...(hooks === undefined ? {} : { metrics: hooks }),
            }),
        }),
    createSelftest: (enqueue, onReceipt) => new SelftestService({ parts: selftestParts, enqueue, logger, onReceipt }),
    checkHealth: () => checkHealth({ docker: config.docker, diskPath: config.stateDir, minDiskFreeBytes: config.minDiskFreeBytes }),
    writeStatus: (report) => writeStatus(config.stateDir, report),
    now: () => ctx.clock.now(),
    timers: ctx.clock,
    logger,
    ...(hooks === undefined ? {} : { metrics: hooks }),
  });

  logger.info(
    { machine_id: identity.machine_id, channel_url: identity.channel_url, agent_version: ctx.agentVersion, state_dir: config.stateDir },
    'ark-agent starting',
  );
  await agent.start();
  const signal = await ctx.waitForSignal(['SIGTERM', 'SIGINT']);
  logger.info({ signal }, 'stopping');
  await agent.stop();
  await metrics?.close();
  logger.info({}, 'stopped');
  logger.flush?.();
  return 0;
}
