import { fileURLToPath } from 'node:url';
import { TELEMETRY_BATCH_MAX_SAMPLES, TelemetryMessage } from '@ark/shared/channel/messages';
import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import type { GpuCollector, HostCollector } from '../collectors/index.js';
import { RecordedGpuCollector } from '../collectors/index.js';
import { registerFormats } from '../formats.js';
import { type TelemetryBatchBody, TelemetryPipeline } from './pipeline.js';
import { telemetrySample } from './sample.js';

const quietLogger = { warn: () => {} };
const host: HostCollector = {
  sample: async () => ({ cpu_utilization_pct: 12.3456, load1: 0.5, memory_used_bytes: 1e9 + 0.4, uptime_s: 100.7 }),
};
const noGpu: GpuCollector = { sample: async () => [] };

function pipeline(options: {
  bufferSamples: number;
  enqueue?: (body: TelemetryBatchBody) => unknown;
  gpu?: GpuCollector;
  host?: HostCollector;
}) {
  let tick = 0;
  const sent: TelemetryBatchBody[] = [];
  const telemetry = new TelemetryPipeline({
    gpu: options.gpu ?? noGpu,
    host: options.host ?? host,
    now: () => new Date(Date.UTC(2025, 0, 1, 0, 0, tick++)),
    bufferSamples: options.bufferSamples,
    enqueue: options.enqueue ?? ((body) => void sent.push(body)),
    logger: quietLogger,
  });
  return { telemetry, sent };
}

describe('TelemetryPipeline', () => {
  it('sends every sample exactly once, in batches of at most TELEMETRY_BATCH_MAX_SAMPLES', async () => {
    const { telemetry, sent } = pipeline({ bufferSamples: 1000 });
    for (let i = 0; i < 130; i += 1) await telemetry.sample();
    expect(await telemetry.flush()).toBe(3);
    expect(sent.map((batch) => batch.samples.length)).toEqual([TELEMETRY_BATCH_MAX_SAMPLES, TELEMETRY_BATCH_MAX_SAMPLES, 10]);
    const times = sent.flatMap((batch) => batch.samples.map((sample) => sample.at));
    expect(new Set(times).size).toBe(130);
    expect(times).toEqual([...times].sort());
    expect(telemetry.counters()).toEqual({
      samples_taken: 130,
      samples_enqueued: 130,
      batches_enqueued: 3,
      samples_dropped: 0,
      ticks_skipped: 0,
      buffered: 0,
    });
    // Nothing left: a second flush sends nothing.
    expect(await telemetry.flush()).toBe(0);
    expect(sent).toHaveLength(3);
  });

  it('builds batches the protocol accepts', async () => {
    const gpu = await RecordedGpuCollector.fromFiles([
      fileURLToPath(new URL('../../../test/fixtures/nvidia-smi/l4-x2-driver-555.xml', import.meta.url)),
    ]);
    const { telemetry, sent } = pipeline({ bufferSamples: 10, gpu });
    await telemetry.sample();
    await telemetry.flush();
    registerFormats();
    const message = { v: 1, sid: 's', seq: 1, id: 1, ...sent[0] };
    expect([...Value.Errors(TelemetryMessage, message)]).toEqual([]);
    expect(sent[0]?.samples[0]?.devices).toHaveLength(2);
  });

  it('keeps memory bounded: a full buffer drops its oldest samples and counts them', async () => {
    const { telemetry, sent } = pipeline({ bufferSamples: 10 });
    for (let i = 0; i < 25; i += 1) await telemetry.sample();
    expect(telemetry.counters()).toMatchObject({ samples_taken: 25, samples_dropped: 15, buffered: 10 });
    await telemetry.flush();
    expect(sent[0]?.samples.map((sample) => sample.at.slice(17, 19))).toEqual(['15', '16', '17', '18', '19', '20', '21', '22', '23', '24']);
  });

  it('keeps the samples when the channel refuses a batch, and sends them with the next flush', async () => {
    let refuse = true;
    const sent: TelemetryBatchBody[] = [];
    const { telemetry } = pipeline({
      bufferSamples: 100,
      enqueue: (body) => {
        if (refuse) throw new Error('queue full');
        sent.push(body);
      },
    });
    await telemetry.sample();
    await telemetry.sample();
    expect(await telemetry.flush()).toBe(0);
    expect(telemetry.counters()).toMatchObject({ samples_enqueued: 0, buffered: 2 });
    refuse = false;
    await telemetry.sample();
    expect(await telemetry.flush()).toBe(1);
    expect(sent[0]?.samples).toHaveLength(3);
    expect(telemetry.counters()).toMatchObject({ samples_enqueued: 3, buffered: 0 });
  });

  it('never sends a sample twice when sampling wraps the buffer while a batch is being queued', async () => {
    let release: () => void = () => {};
    const sent: TelemetryBatchBody[] = [];
    const { telemetry } = pipeline({
      bufferSamples: 10,
      enqueue: (body) => {
        sent.push(body);
        if (sent.length === 1) return new Promise<void>((resolve) => (release = resolve));
      },
    });
    for (let i = 0; i < 10; i += 1) await telemetry.sample();
    const flushing = telemetry.flush();
    // While the first batch is in the channel's hands, five more samples push the five oldest out.
    for (let i = 0; i < 5; i += 1) await telemetry.sample();
    release();
    await flushing;
    await telemetry.flush();
    const times = sent.flatMap((batch) => batch.samples.map((sample) => sample.at));
    expect(times).toHaveLength(15);
    expect(new Set(times).size).toBe(15);
  });

  it('skips a tick while the previous sample is still being taken', async () => {
    let finish: () => void = () => {};
    const slowGpu: GpuCollector = { sample: () => new Promise((resolve) => (finish = () => resolve([]))) };
    const { telemetry } = pipeline({ bufferSamples: 10, gpu: slowGpu });
    const first = telemetry.sample();
    await telemetry.sample();
    finish();
    await first;
    expect(telemetry.counters()).toMatchObject({ samples_taken: 1, ticks_skipped: 1 });
  });

  it('still samples the host when the GPU collector throws', async () => {
    const broken: GpuCollector = { sample: async () => Promise.reject(new Error('boom')) };
    const { telemetry, sent } = pipeline({ bufferSamples: 10, gpu: broken });
    await telemetry.sample();
    await telemetry.flush();
    expect(sent[0]?.samples[0]).toMatchObject({ devices: [], host: { cpu_utilization_pct: 12.35 } });
  });
});

describe('telemetrySample', () => {
  it('rounds readings, leaves unmeasured fields out and omits an empty host', () => {
    const at = new Date('2025-01-01T00:00:00.000Z');
    expect(
      telemetrySample(at, { cpu_utilization_pct: 3.14359, memory_used_bytes: 12.6, uptime_s: Number.NaN }, [
        { pci_address: '0000:01:00.0', model: 'X', vram_bytes: 1n, temperature_c: 40.004, memory_used_bytes: 5.5 },
      ]),
    ).toEqual({
      at: '2025-01-01T00:00:00.000Z',
      host: { cpu_utilization_pct: 3.14, memory_used_bytes: 13 },
      devices: [{ pci_address: '0000:01:00.0', temperature_c: 40, memory_used_bytes: 6 }],
    });
    expect(telemetrySample(at, {}, [])).toEqual({ at: '2025-01-01T00:00:00.000Z', devices: [] });
  });
});
