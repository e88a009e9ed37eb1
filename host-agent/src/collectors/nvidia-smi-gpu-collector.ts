import { execFile } from 'node:child_process';
import { type GpuIdentity, type GpuIdentitySource, gpuIdentityFromNvidiaSmiLog } from './gpu-identity.js';
import { readNvidiaSmiLog, samplesFromNvidiaSmiLog, describeGpus } from './nvidia-smi-xml.js';
import type { CollectorLogger, GpuCollector, GpuInventory, GpuInventorySource, GpuSample } from './types.js';

export type NvidiaSmiGpuCollectorOptions = {
  /** Path or name looked up on PATH. */
  binaryPath?: string;
  /** A wedged driver can hang nvidia-smi for minutes; past this it is killed and the sample is empty. */
  timeoutMs?: number;
  /** Output beyond this is refused; one GPU prints 20 to 80 KB, so the default leaves room for a full chassis. */
  maxOutputBytes?: number;
  logger?: CollectorLogger;
  /** Called on each failed read (the agent's metrics count collector errors). */
  onError?: () => void;
};

export const NVIDIA_SMI_TIMEOUT_MS_DEFAULT = 10_000;
export const NVIDIA_SMI_OUTPUT_BYTES_MAX_DEFAULT = 8 * 1024 * 1024;

/**
 * Runs `nvidia-smi -q -x` and maps it with the same parser node-nvidia-smi uses. We spawn it ourselves
 * rather than through node-nvidia-smi's runner because that one has no timeout, no binary path and
 * treats any stderr warning as failure. No GPU, no binary, a failing driver: an empty list, logged
 * once per outage, never an exception.
 */
export class NvidiaSmiGpuCollector implements GpuCollector, GpuInventorySource, GpuIdentitySource {
  readonly #binaryPath: string;
  readonly #timeoutMs: number;
  readonly #maxOutputBytes: number;
  readonly #logger: CollectorLogger;
  readonly #onError: (() => void) | undefined;
  #failureLogged = false;
  // One nvidia-smi at a time: callers that overlap share the run in flight.
  #inFlight: Promise<unknown> | undefined;

  constructor(options: NvidiaSmiGpuCollectorOptions = {}) {
    this.#binaryPath = options.binaryPath ?? 'nvidia-smi';
    this.#timeoutMs = options.timeoutMs ?? NVIDIA_SMI_TIMEOUT_MS_DEFAULT;
    this.#maxOutputBytes = options.maxOutputBytes ?? NVIDIA_SMI_OUTPUT_BYTES_MAX_DEFAULT;
    this.#logger = options.logger ?? consoleLogger;
    this.#onError = options.onError;
  }

  async sample(): Promise<GpuSample[]> {
    const log = await this.#readShared();
    return log === undefined ? [] : samplesFromNvidiaSmiLog(log).gpus;
  }

  async inventory(): Promise<GpuInventory> {
    const log = await this.#readShared();
    return log === undefined ? { gpus: [] } : describeGpus(log);
  }

  /** The receipt's GPU identity (gpu-identity.ts); no nvidia-smi or a failing one: no GPUs. */
  async identity(): Promise<GpuIdentity> {
    const log = await this.#readShared();
    return log === undefined ? { gpus: [] } : gpuIdentityFromNvidiaSmiLog(log);
  }

  #readShared(): Promise<unknown> {
    this.#inFlight ??= this.#read().finally(() => {
      this.#inFlight = undefined;
    });
    return this.#inFlight;
  }

  async #read(): Promise<unknown> {
    try {
      const stdout = await this.#run();
      const log = readNvidiaSmiLog(stdout);
      this.#failureLogged = false;
      return log;
    } catch (error) {
      this.#onError?.();
      if (!this.#failureLogged) {
        this.#failureLogged = true;
        this.#logger.warn(
          { binary_path: this.#binaryPath, error: describeError(error) },
          'nvidia-smi unavailable; reporting no GPUs until it answers again',
        );
      }
      return undefined;
    }
  }

  #run(): Promise<string> {
    return new Promise((resolve, reject) => {
      execFile(
        this.#binaryPath,
        ['-q', '-x'],
        {
          timeout: this.#timeoutMs,
          killSignal: 'SIGKILL',
          maxBuffer: this.#maxOutputBytes,
          encoding: 'utf8',
          windowsHide: true,
        },
        (error, stdout) => {
          if (error === null) return resolve(stdout);
          // nvidia-smi exits non-zero when one device is lost but still prints the healthy ones;
          // output cut short by our timeout or buffer limit is never parsed.
          const exitedOnItsOwn = typeof error.code === 'number' && !error.killed && error.signal == null;
          if (exitedOnItsOwn && stdout.includes('</nvidia_smi_log>')) return resolve(stdout);
          reject(error);
        },
      );
    });
  }
}

function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const code = (error as NodeJS.ErrnoException).code;
  const message = error.message.split('\n', 1)[0] ?? '';
  return (code === undefined ? message : `${code}: ${message}`).slice(0, 300);
}

const consoleLogger: CollectorLogger = {
  warn(detail, message) {
    console.warn(message, detail);
  },
};
