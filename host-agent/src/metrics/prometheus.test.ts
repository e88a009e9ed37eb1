import { describe, expect, it } from 'vitest';
import { ManualClock } from '@ark/shared';
import { observePulls } from '../job-runtime.js';
import { RecordedContainerRuntime } from '../runtime/testing/recorded-container-runtime.js';
import { startMetricsServer } from './prometheus.js';

/** The value of one sample line (`name{labels} value`); undefined when absent. */
function sample(text: string, series: string): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    if (line.slice(0, space) === series) return Number(line.slice(space + 1));
  }
  return undefined;
}

describe('the Prometheus exporter', () => {
  it('serves the hooks and the snapshot on loopback, and times pulls through the runtime it wraps', async () => {
    let snapshot = { runningJobs: 2, channel: { connected: true, reconnects: 3, queued: 5 } };
    const server = await startMetricsServer({ host: '127.0.0.1', port: 0, snapshot: () => snapshot });
    try {
      const recorded = new RecordedContainerRuntime({ clock: new ManualClock(0) });
      const runtime = observePulls(recorded, server.hooks);
      const reference = recorded.answers.image.reference;
      expect((await runtime.pullImage(reference)).pulled).toBe(true);
      expect((await runtime.pullImage(reference)).pulled).toBe(false);
      const missing = reference.replace(/sha256:[0-9a-f]{64}/, recorded.answers.pull_unknown_digest.digest);
      await expect(runtime.pullImage(missing)).rejects.toThrow(/image pull failed/);
      // Other methods reach the wrapped runtime unchanged.
      await runtime.ensureVolume('v1', {});
      expect(recorded.calls.map((call) => call.method)).toEqual(['pullImage', 'pullImage', 'pullImage', 'ensureVolume']);

      for (const status of ['accepted', 'pulling', 'starting', 'ready', 'failed']) server.hooks.jobStatus(status);
      server.hooks.heartbeatSent();
      server.hooks.heartbeatSent();
      server.hooks.channelConnected();
      server.hooks.channelConnected();
      server.hooks.collectorError('gpu');

      const scrape = async () => {
        const response = await fetch(`http://127.0.0.1:${server.address.port}/metrics`);
        expect(response.status).toBe(200);
        return response.text();
      };
      const text = await scrape();
      expect(sample(text, 'ark_agent_image_pulls_total{outcome="pulled"}')).toBe(1);
      expect(sample(text, 'ark_agent_image_pulls_total{outcome="present"}')).toBe(1);
      expect(sample(text, 'ark_agent_image_pulls_total{outcome="failed"}')).toBe(1);
      expect(sample(text, 'ark_agent_image_pull_bytes_total')).toBe(recorded.answers.image_inspect.Size);
      expect(sample(text, 'ark_agent_image_pull_duration_seconds_count{outcome="pulled"}')).toBe(1);
      expect(sample(text, 'ark_agent_jobs_started_total')).toBe(1);
      expect(sample(text, 'ark_agent_jobs_failed_total')).toBe(1);
      expect(sample(text, 'ark_agent_job_statuses_total{status="pulling"}')).toBe(1);
      expect(sample(text, 'ark_agent_heartbeats_sent_total')).toBe(2);
      // The first connection is not a reconnect.
      expect(sample(text, 'ark_agent_channel_reconnects_total')).toBe(1);
      expect(sample(text, 'ark_agent_collector_errors_total{collector="gpu"}')).toBe(1);
      expect(sample(text, 'ark_agent_collector_errors_total{collector="host"}')).toBe(0);
      expect(sample(text, 'ark_agent_jobs_running')).toBe(2);
      expect(sample(text, 'ark_agent_channel_connected')).toBe(1);
      expect(sample(text, 'ark_agent_channel_reconnect_attempts')).toBe(3);
      expect(sample(text, 'ark_agent_resend_queue_depth')).toBe(5);

      // Gauges are read at scrape time.
      snapshot = { runningJobs: 0, channel: { connected: false, reconnects: 4, queued: 9 } };
      const after = await scrape();
      expect(sample(after, 'ark_agent_jobs_running')).toBe(0);
      expect(sample(after, 'ark_agent_channel_connected')).toBe(0);
      expect(sample(after, 'ark_agent_resend_queue_depth')).toBe(9);

      const other = await fetch(`http://127.0.0.1:${server.address.port}/`);
      expect(other.status).toBe(404);
      await other.text();
    } finally {
      await server.close();
    }
  });
});
