import { readFile } from 'node:fs/promises';
import { type GpuIdentity, type GpuIdentitySource, gpuIdentityFromNvidiaSmiLog } from './gpu-identity.js';
import { describeGpus, readNvidiaSmiLog, samplesFromNvidiaSmiLog } from './nvidia-smi-xml.js';
import type { GpuCollector, GpuInventory, GpuInventorySource, GpuSample } from './types.js';

/**
 * Test double that replays recorded `nvidia-smi -q -x` documents through the real parser, one per
 * sample, cycling. No documents behaves like a machine without GPUs.
 */
export class RecordedGpuCollector implements GpuCollector, GpuInventorySource, GpuIdentitySource {
  readonly #logs: readonly unknown[];
  #next = 0;

  /** Documents are parsed here, so a broken fixture fails the test that loads it. */
  constructor(documents: readonly string[]) {
    this.#logs = documents.map((xml) => readNvidiaSmiLog(xml));
  }

  static async fromFiles(paths: readonly string[]): Promise<RecordedGpuCollector> {
    const documents = await Promise.all(paths.map((path) => readFile(path, 'utf8')));
    return new RecordedGpuCollector(documents);
  }

  async sample(): Promise<GpuSample[]> {
    const log = this.#logs[this.#next];
    if (log === undefined) return [];
    this.#next = (this.#next + 1) % this.#logs.length;
    return samplesFromNvidiaSmiLog(log).gpus;
  }

  /** Describes the first document, as enrollment would see the machine. */
  async inventory(): Promise<GpuInventory> {
    const log = this.#logs[0];
    return log === undefined ? { gpus: [] } : describeGpus(log);
  }

  /** The first document's GPU identity, as a self-test would read it. */
  async identity(): Promise<GpuIdentity> {
    const log = this.#logs[0];
    return log === undefined ? { gpus: [] } : gpuIdentityFromNvidiaSmiLog(log);
  }
}
