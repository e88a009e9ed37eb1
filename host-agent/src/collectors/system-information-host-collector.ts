import { statfs } from 'node:fs/promises';
import { loadavg, platform, uptime as osUptime } from 'node:os';
import { currentLoad } from 'systeminformation/lib/cpu.js';
import { mem } from 'systeminformation/lib/memory.js';
import type { CollectorLogger, HostCollector, HostSample } from './types.js';

export type SystemInformationHostCollectorOptions = {
  /** Disk free is reported for the filesystem holding this path: the agent's state directory. */
  stateDir?: string;
  logger?: CollectorLogger;
  /** Called once per sample in which a figure could not be read (the agent's metrics count collector errors). */
  onError?: () => void;
};

/**
 * Host figures from systeminformation and node:os. Each figure is read on its own, so one that fails
 * is left out while the others are still reported; failures are logged once per figure and outage.
 */
export class SystemInformationHostCollector implements HostCollector {
  readonly #stateDir: string;
  readonly #logger: CollectorLogger;
  readonly #failing = new Set<keyof HostSample>();
  readonly #onError: (() => void) | undefined;

  constructor(options: SystemInformationHostCollectorOptions = {}) {
    this.#stateDir = options.stateDir ?? '/';
    this.#logger = options.logger ?? consoleLogger;
    this.#onError = options.onError;
  }

  async sample(): Promise<HostSample> {
    const [cpu, memory, disk, uptime] = await Promise.all([
      this.#read('cpu_utilization_pct', async () => (await currentLoad()).currentLoad),
      // `active` is used memory less buffers and page cache: what the host cannot hand to a job.
      this.#read('memory_used_bytes', async () => (await mem()).active),
      // statfs of the state directory, not si.fsSize(): it names the right filesystem directly and
      // spawns no `df` each sample.
      this.#read('disk_free_bytes', async () => {
        const stats = await statfs(this.#stateDir);
        return stats.bavail * stats.bsize;
      }),
      // os.uptime() is what si.time() reports as uptime; si.time() itself also resolves the time zone through
      // Intl (which maps ICU's data, about 8 MB of RSS) and runs `date` synchronously on every sample.
      this.#read('uptime_s', async () => osUptime()),
    ]);
    if ([cpu, memory, disk, uptime].includes(undefined)) this.#onError?.();
    const sample: HostSample = {};
    if (cpu !== undefined) sample.cpu_utilization_pct = cpu;
    // Windows has no load average; node reports [0, 0, 0] there, which is not a measurement.
    if (platform() !== 'win32') {
      const load1 = loadavg()[0];
      if (load1 !== undefined && Number.isFinite(load1)) sample.load1 = load1;
    }
    if (memory !== undefined) sample.memory_used_bytes = memory;
    if (disk !== undefined) sample.disk_free_bytes = disk;
    if (uptime !== undefined) sample.uptime_s = uptime;
    return sample;
  }

  async #read(field: keyof HostSample, read: () => Promise<number>): Promise<number | undefined> {
    try {
      const value = await read();
      if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
        throw new Error(`unusable value ${String(value)}`);
      }
      this.#failing.delete(field);
      return value;
    } catch (error) {
      if (!this.#failing.has(field)) {
        this.#failing.add(field);
        const message = error instanceof Error ? error.message : String(error);
        this.#logger.warn({ field, error: message.slice(0, 300) }, 'host figure unavailable; leaving it out');
      }
      return undefined;
    }
  }
}

const consoleLogger: CollectorLogger = {
  warn(detail, message) {
    console.warn(message, detail);
  },
};
