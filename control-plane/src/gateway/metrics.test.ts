import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createGatewayMetrics } from './metrics.js';

// The frame series are counted in plain numbers and read when scraped: what a scrape shows must be exactly what
// prom-client's own counter and histogram would have shown for the same frames.

describe('gateway frame metrics', () => {
  it('expose frames and handling times as a Prometheus counter and histogram', async () => {
    const registry = new Registry();
    const metrics = createGatewayMetrics(registry);
    for (const seconds of [0.0001, 0.0005, 0.003, 0.04, 3]) metrics.frames.record('heartbeat', seconds);
    metrics.frames.record('telemetry', 0.02);

    const text = await registry.metrics();
    const lines = text.split('\n');
    expect(lines).toContain('# TYPE ark_channel_frame_handling_seconds histogram');
    expect(lines).toContain('ark_channel_frames_total{type="heartbeat"} 5');
    expect(lines).toContain('ark_channel_frames_total{type="telemetry"} 1');
    // Cumulative buckets: a value equal to a bound falls in that bucket; 3 s is above every bound.
    const bucket = (le: string, type = 'heartbeat') =>
      lines.find((line) => line.startsWith(`ark_channel_frame_handling_seconds_bucket{le="${le}",type="${type}"} `))?.split(' ')[1];
    expect(bucket('0.0005')).toBe('2');
    expect(bucket('0.002')).toBe('2');
    expect(bucket('0.005')).toBe('3');
    expect(bucket('0.05')).toBe('4');
    expect(bucket('2.5')).toBe('4');
    expect(bucket('+Inf')).toBe('5');
    expect(bucket('0.02', 'telemetry')).toBe('1');
    expect(bucket('0.01', 'telemetry')).toBe('0');
    expect(lines).toContain('ark_channel_frame_handling_seconds_count{type="heartbeat"} 5');
    const sum = Number(lines.find((line) => line.startsWith('ark_channel_frame_handling_seconds_sum{type="heartbeat"}'))?.split(' ')[1]);
    expect(sum).toBeCloseTo(3.0436, 6);
  });

  it('counts frames of gateways sharing a registry together, and scrapes repeat without double counting', async () => {
    const registry = new Registry();
    const a = createGatewayMetrics(registry);
    const b = createGatewayMetrics(registry);
    a.frames.record('heartbeat', 0.001);
    b.frames.record('heartbeat', 0.001);
    expect(await registry.metrics()).toContain('ark_channel_frames_total{type="heartbeat"} 2');
    expect(await registry.metrics()).toContain('ark_channel_frames_total{type="heartbeat"} 2');
    const json = await registry.getMetricsAsJSON();
    expect(json.map((m) => m.name)).toEqual(expect.arrayContaining(['ark_channel_frames_total', 'ark_channel_frame_handling_seconds']));
  });
});
