import { TELEMETRY_BATCH_MAX_SAMPLES, type TelemetrySample } from '@ark/shared/channel/messages';
import type { GpuCollector, HostCollector } from '../collectors/index.js';
import { RingBuffer } from './ring-buffer.js';
import { telemetrySample } from './sample.js';

export type TelemetryBatchBody = { t: 'telemetry'; samples: TelemetrySample[] };

export interface TelemetryCounters {
  /** Samples taken since start. */
  samples_taken: number;
  /** Samples handed to the channel in batches (which persists and delivers them). */
  samples_enqueued: number;
  batches_enqueued: number;
  /** Samples lost because the buffer was full (the channel refused batches for a long time). */
  samples_dropped: number;
  /** Ticks skipped because the previous sample was still being taken (a slow nvidia-smi). */
  ticks_skipped: number;
  buffered: number;
}

export interface TelemetryPipelineOptions {
  gpu: GpuCollector;
  host: HostCollector;
  now: () => Date;
  bufferSamples: number;
  /** Hands one batch to the channel's reliable queue; a rejection leaves the samples buffered for the next flush. */
  enqueue: (body: TelemetryBatchBody) => Promise<unknown> | unknown;
  logger: { warn(detail: Record<string, unknown>, message: string): void };
  /** Samples per batch; the protocol's bound unless a test asks for fewer. */
  batchMaxSamples?: number;
  /** A collector's sample() rejected (the agent's metrics count it). */
  onCollectorError?: (collector: 'gpu' | 'host') => void;
}

/** Samples the machine into a bounded buffer and drains it into reliable telemetry batches. */
export class TelemetryPipeline {
  readonly #options: TelemetryPipelineOptions;
  // Each sample carries its serial number, so a flush removes exactly what it sent even if sampling wrapped the
  // buffer meanwhile.
  readonly #buffer: RingBuffer<{ serial: number; sample: TelemetrySample }>;
  #nextSerial = 1;
  readonly #batchMaxSamples: number;
  readonly #counters = { samples_taken: 0, samples_enqueued: 0, batches_enqueued: 0, samples_dropped: 0, ticks_skipped: 0 };
  #sampling = false;
  #flushing: Promise<number> | undefined;

  constructor(options: TelemetryPipelineOptions) {
    this.#options = options;
    this.#buffer = new RingBuffer(options.bufferSamples);
    this.#batchMaxSamples = Math.min(options.batchMaxSamples ?? TELEMETRY_BATCH_MAX_SAMPLES, TELEMETRY_BATCH_MAX_SAMPLES);
  }

  counters(): TelemetryCounters {
    return { ...this.#counters, buffered: this.#buffer.size };
  }

  /** Takes one sample. A tick that arrives while the last one is still running is skipped, not queued. */
  async sample(): Promise<void> {
    if (this.#sampling) {
      this.#counters.ticks_skipped += 1;
      return;
    }
    this.#sampling = true;
    try {
      const at = this.#options.now();
      const [host, gpus] = await Promise.all([
        this.#options.host.sample().catch((error: unknown) => {
          this.#options.logger.warn({ error: String(error) }, 'host collector failed');
          this.#options.onCollectorError?.('host');
          return {};
        }),
        this.#options.gpu.sample().catch((error: unknown) => {
          this.#options.logger.warn({ error: String(error) }, 'GPU collector failed');
          this.#options.onCollectorError?.('gpu');
          return [];
        }),
      ]);
      this.#counters.samples_dropped += this.#buffer.push({ serial: this.#nextSerial, sample: telemetrySample(at, host, gpus) });
      this.#nextSerial += 1;
      this.#counters.samples_taken += 1;
    } finally {
      this.#sampling = false;
    }
  }

  /** Drains the buffer into batches of at most the batch bound; answers how many batches were enqueued. */
  flush(): Promise<number> {
    // One flush at a time, so two callers never hand the same samples to the channel.
    this.#flushing ??= this.#flush().finally(() => {
      this.#flushing = undefined;
    });
    return this.#flushing;
  }

  async #flush(): Promise<number> {
    let batches = 0;
    while (this.#buffer.size > 0) {
      const entries = this.#buffer.peek(this.#batchMaxSamples);
      const lastSerial = entries[entries.length - 1]?.serial ?? 0;
      try {
        await this.#options.enqueue({ t: 'telemetry', samples: entries.map((entry) => entry.sample) });
      } catch (error) {
        this.#options.logger.warn({ error: String(error), buffered: this.#buffer.size }, 'telemetry batch not queued; keeping the samples');
        break;
      }
      this.#buffer.discardWhile((entry) => entry.serial <= lastSerial);
      this.#counters.samples_enqueued += entries.length;
      this.#counters.batches_enqueued += 1;
      batches += 1;
    }
    return batches;
  }
}
