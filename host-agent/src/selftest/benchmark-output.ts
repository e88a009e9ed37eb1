// The benchmark container's one JSON line (host-agent/benchmark/selftest-bench.mjs) and the arithmetic that turns
// its raw counts and seconds into the receipt's rates. Pure, so the figures are tested on recorded output, and the
// formulas here are the ones host-agent/README.md states for anyone redoing them from a receipt.
import type { ReceiptBenchmark } from '@ark/shared';
import { type Static, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

export const BENCHMARK_OUTPUT_FORMAT = 1;

const Seconds = Type.Number({ exclusiveMinimum: 0, maximum: 86_400 });
const Count = Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER });

/** What the benchmark measured, as it prints it (counts and seconds, no rates). */
export const BenchmarkOutput = Type.Object(
  {
    ark_selftest_benchmark: Type.Literal(BENCHMARK_OUTPUT_FORMAT),
    backend: Type.Union([Type.Literal('cpu'), Type.Literal('cuda')]),
    threads: Count,
    model_params: Count,
    model_bytes: Count,
    load_seconds: Type.Number({ minimum: 0, maximum: 86_400 }),
    prompt_tokens: Count,
    prompt_seconds: Seconds,
    generation_tokens: Count,
    generation_seconds: Seconds,
    disk_bytes: Count,
    disk_write_seconds: Seconds,
    disk_read_seconds: Seconds,
    /** GPU path only, when the image measures it: bytes copied host -> device and the seconds it took. */
    host_to_device_bytes: Type.Optional(Count),
    host_to_device_seconds: Type.Optional(Seconds),
    total_seconds: Type.Optional(Type.Number({ minimum: 0 })),
  },
  // A newer image may say more; the agent reads what it knows.
  { additionalProperties: true },
);
export type BenchmarkOutput = Static<typeof BenchmarkOutput>;

export class BenchmarkOutputError extends Error {
  override name = 'BenchmarkOutputError';
}

/**
 * The benchmark's figures from its output: the last line that is a JSON object naming `ark_selftest_benchmark`
 * (the runtimes's log lines before it are ignored). A line with `error` is the benchmark's own failure.
 */
export function parseBenchmarkOutput(text: string): BenchmarkOutput {
  const lines = text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line.startsWith('{'));
  for (const line of lines.reverse()) {
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      continue;
    }
    if (typeof value !== 'object' || value === null || !('ark_selftest_benchmark' in value)) continue;
    if ('error' in value)
      throw new BenchmarkOutputError(`the benchmark failed: ${String((value as { error: unknown }).error).slice(0, 300)}`);
    const problem = Value.Errors(BenchmarkOutput, value).First();
    if (problem !== undefined)
      throw new BenchmarkOutputError(`the benchmark's output is malformed at ${problem.path || '/'}: ${problem.message}`);
    return value as BenchmarkOutput;
  }
  throw new BenchmarkOutputError('the benchmark printed no figures');
}

/** Rounds a rate to 4 significant digits: more would claim a precision one run does not have. */
export function round4(value: number): number {
  if (value === 0 || !Number.isFinite(value)) return 0;
  return Number(value.toPrecision(4));
}

/**
 * The receipt's benchmark section:
 * - prompt and generation tokens/s = tokens / seconds;
 * - matmul_gflops = 2 x model_params x prompt tokens/s / 1e9 (a forward pass is one multiply-add per weight per token);
 * - memory_bandwidth_gbps = model_bytes x generation tokens/s / 1e9 (one token reads every weight once);
 * - disk_write_mbps and disk_read_mbps = disk_bytes / seconds / 1e6 (decimal megabytes);
 * - host_to_device_gbps = bytes / seconds / 1e9, where the GPU path measured it.
 */
export function benchmarkFigures(output: BenchmarkOutput, image: string): ReceiptBenchmark {
  const promptRate = output.prompt_tokens / output.prompt_seconds;
  const generationRate = output.generation_tokens / output.generation_seconds;
  const figures: ReceiptBenchmark = {
    image,
    backend: output.backend,
    matmul_gflops: round4((2 * output.model_params * promptRate) / 1e9),
    memory_bandwidth_gbps: round4((output.model_bytes * generationRate) / 1e9),
    prompt_tokens_per_s: round4(promptRate),
    generation_tokens_per_s: round4(generationRate),
    model_bytes: output.model_bytes,
    model_params: output.model_params,
    disk_write_mbps: round4(output.disk_bytes / output.disk_write_seconds / 1e6),
    disk_read_mbps: round4(output.disk_bytes / output.disk_read_seconds / 1e6),
  };
  if (output.host_to_device_bytes !== undefined && output.host_to_device_seconds !== undefined) {
    figures.host_to_device_gbps = round4(output.host_to_device_bytes / output.host_to_device_seconds / 1e9);
  }
  return figures;
}
