import { identityPath, readIdentity, readStatus } from '../state.js';
import type { CliContext } from './context.js';

/**
 * `ark-agent status`: what this machine knows about itself: its identity, whether the daemon runs, and the
 * daemon's last report (connection, last heartbeat acknowledged, queue, telemetry counters). `--json` prints
 * the same as one JSON object for scripts. Exit 0 when paired, 1 when not.
 */
export async function statusCommand(ctx: CliContext, options: { json?: boolean }): Promise<number> {
  const stateDir = ctx.config.stateDir;
  const identity = await readIdentity(stateDir);
  const report = await readStatus(stateDir);
  const running = report !== null && report.stopped_at === undefined && ctx.isProcessAlive(report.pid);
  const summary = {
    paired: identity !== null,
    state_dir: stateDir,
    machine_id: identity?.machine_id ?? null,
    control_plane_url: identity?.control_plane_url ?? ctx.config.controlPlaneUrl,
    channel_url: identity?.channel_url ?? null,
    enrolled_at: identity?.enrolled_at ?? null,
    daemon: { running, pid: report?.pid ?? null },
    report,
  };
  if (options.json === true) {
    ctx.out(`${JSON.stringify(summary, null, 2)}\n`);
    return identity === null ? 1 : 0;
  }
  if (identity === null) {
    ctx.out(`Not paired: no identity at ${identityPath(stateDir)}. Run \`ark-agent pair --control-plane URL\`.\n`);
    return 1;
  }
  const channel = (report?.channel ?? {}) as Record<string, unknown>;
  const telemetry = (report?.telemetry ?? {}) as Record<string, unknown>;
  const pick = (...names: string[]) => names.map((name) => channel[name]).find((value) => value !== undefined && value !== null);
  const connected = running ? pick('connected') === true : false;
  const lines: Array<[string, string]> = [
    ['machine', identity.machine_id],
    ['control plane', identity.control_plane_url],
    ['enrolled at', identity.enrolled_at],
    [
      'daemon',
      report === null
        ? 'never ran'
        : running
          ? `running (pid ${report.pid}, since ${report.started_at})`
          : `not running (last report ${report.updated_at})`,
    ],
    ['connection', connected ? 'connected' : 'disconnected'],
    ['last heartbeat acked', String(pick('lastHeartbeatAckAt', 'last_heartbeat_ack_at') ?? 'never')],
    ['last heartbeat sent', String(report?.last_heartbeat_sent_at ?? 'never')],
    ['unacknowledged', String(pick('queued', 'unacked') ?? 'unknown')],
    [
      'healthy',
      report?.healthy === null || report?.healthy === undefined
        ? 'unknown'
        : report.healthy
          ? 'yes'
          : `no: ${(report.problems as string[]).join('; ')}`,
    ],
    [
      'telemetry',
      report === null
        ? 'none yet'
        : `${telemetry.samples_taken ?? 0} samples taken, ${telemetry.samples_enqueued ?? 0} queued for sending in ${telemetry.batches_enqueued ?? 0} batches, ${telemetry.samples_dropped ?? 0} dropped`,
    ],
  ];
  const nettest = report?.last_nettest as Record<string, unknown> | null | undefined;
  if (nettest) {
    lines.push([
      'last network test',
      nettest.error
        ? `${nettest.measured_at}: ${nettest.error}`
        : `${nettest.measured_at}: down ${nettest.download_mbps ?? '?'} Mbps, up ${nettest.upload_mbps ?? '?'} Mbps, latency ${nettest.latency_ms ?? '?'} ms`,
    ]);
  }
  const selftest = report?.last_selftest as Record<string, unknown> | null | undefined;
  if (selftest) {
    lines.push([
      'last self-test',
      `#${selftest.receipt_seq} (${selftest.trigger}) ${selftest.measured_at}: ${
        selftest.ok === true
          ? `ok, ${selftest.gpus} GPU(s)${selftest.matmul_gflops === undefined ? '' : `, ${selftest.matmul_gflops} GFLOP/s, ${selftest.memory_bandwidth_gbps} GB/s`}`
          : `failed: ${selftest.error}`
      }`,
    ]);
  }
  const width = Math.max(...lines.map(([label]) => label.length)) + 2;
  ctx.out(`${lines.map(([label, value]) => `${`${label}:`.padEnd(width)}${value}`).join('\n')}\n`);
  return 0;
}
