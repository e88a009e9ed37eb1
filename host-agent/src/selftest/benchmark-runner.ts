// Runs the self-test's benchmark image through the job runtime (the ContainerRuntime every job uses): pulled by
// digest, refused when the engine's copy does not carry that digest (DockerRuntime.pullImage), created with the
// job limits and hardening of any job container, no network, a volume of its own for the disk figures, and bounded:
// a container still running at the deadline is stopped and removed and the run fails. Nothing of it is left behind.
import { randomUUID } from 'node:crypto';
import type { Clock, JobLimits, ReceiptBenchmark } from '@ark/shared';
import type { ContainerRuntime } from '../runtime/container-runtime.js';
import { formatDigestReference, parseDigestReference } from '../runtime/image-reference.js';
import { VOLUME_MOUNT_PATH } from '../jobs/job-context.js';
import { containerLimitsOf, NANO_CPUS_PER_CPU } from '../jobs/job-limits.js';
import { errorText } from '../jobs/text.js';
import { type BenchmarkOutput, benchmarkFigures, parseBenchmarkOutput } from './benchmark-output.js';

/** Labels a benchmark container carries; not the job label, so job recovery never takes one for a job. */
export const SELFTEST_LABEL = 'ark.selftest';
const OUTPUT_LINES = 50;
const OUTPUT_BYTES = 16 * 1024;

export class BenchmarkFailure extends Error {
  override name = 'BenchmarkFailure';
}

export type BenchmarkRunnerOptions = {
  runtime: ContainerRuntime;
  clock: Clock;
  /** What one job may use here (jobs/job-limits.ts): the benchmark runs confined like a job. Absent: no limits. */
  jobLimits?: JobLimits;
  /** How often the container is looked at while it runs (default 250 ms). */
  pollIntervalMs?: number;
};

export type BenchmarkRequest = {
  /** `name@sha256:...`: the pinned benchmark image; anything not named by digest is refused before any pull. */
  image: string;
  /** Docker device IDs of the GPUs to measure (UUIDs); none: the CPU path. */
  gpuDeviceIds: readonly string[];
  /** Aborting stops the run: the container is stopped and removed, and run() rejects. */
  signal: AbortSignal;
};

export type BenchmarkResult = { output: BenchmarkOutput; figures: ReceiptBenchmark };

export class BenchmarkRunner {
  readonly #options: BenchmarkRunnerOptions;

  constructor(options: BenchmarkRunnerOptions) {
    this.#options = options;
  }

  async run(request: BenchmarkRequest): Promise<BenchmarkResult> {
    const { runtime, clock } = this.#options;
    const parsed = parseDigestReference(request.image);
    if (parsed === undefined) throw new BenchmarkFailure(`benchmark image ${request.image.slice(0, 200)} is not named by a sha256 digest`);
    const image = formatDigestReference(parsed);
    await runtime.pullImage(image, { signal: request.signal });
    throwIfAborted(request.signal);
    const id = randomUUID();
    const name = `ark-selftest-${id}`;
    const labels = { [SELFTEST_LABEL]: id, 'ark.managed-by': 'ark-agent' };
    const limits = this.#options.jobLimits;
    let containerId: string | undefined;
    try {
      await runtime.ensureVolume(name, labels);
      containerId = await runtime.createContainer({
        name,
        image,
        labels,
        env: {
          BENCH_BACKEND: request.gpuDeviceIds.length > 0 ? 'cuda' : 'cpu',
          // llama.cpp's threads spin: more of them than the CPUs the limit gives only fight each other.
          BENCH_THREADS: String(limits === undefined ? 1 : Math.max(1, Math.floor(limits.nano_cpus / NANO_CPUS_PER_CPU))),
          BENCH_DISK_DIR: VOLUME_MOUNT_PATH,
        },
        volumeName: name,
        volumeMountPath: VOLUME_MOUNT_PATH,
        networkMode: 'none',
        portBindings: [],
        gpuDeviceIds: request.gpuDeviceIds,
        ...(limits === undefined ? {} : { limits: containerLimitsOf(limits) }),
      });
      await runtime.startContainer(containerId);
      const pollMs = this.#options.pollIntervalMs ?? 250;
      for (;;) {
        throwIfAborted(request.signal);
        const state = await runtime.inspectContainer(containerId);
        if (state === undefined) throw new BenchmarkFailure('the benchmark container vanished');
        if (!state.running && state.status !== 'created') {
          const logs = await runtime.containerLogs(containerId, { tailLines: OUTPUT_LINES, maxBytes: OUTPUT_BYTES });
          if (state.exitCode !== 0) {
            let detail = `exited with code ${state.exitCode ?? 'unknown'}${state.oomKilled === true ? ' (out of memory)' : ''}`;
            try {
              parseBenchmarkOutput(logs);
            } catch (error) {
              detail = `${detail}: ${errorText(error)}`;
            }
            throw new BenchmarkFailure(`the benchmark ${detail}`.slice(0, 400));
          }
          const output = parseBenchmarkOutput(logs);
          return { output, figures: benchmarkFigures(output, request.image) };
        }
        await clock.sleep(pollMs, request.signal);
      }
    } finally {
      // Stopped and gone whatever happened: a benchmark never keeps running past its run.
      if (containerId !== undefined) await runtime.removeContainer(containerId).catch(() => undefined);
      await runtime.removeVolume(name).catch(() => undefined);
    }
  }
}

function throwIfAborted(signal: AbortSignal): void {
  if (!signal.aborted) return;
  throw signal.reason instanceof Error ? signal.reason : new BenchmarkFailure('the benchmark was stopped');
}
