import { readFileSync } from 'node:fs';
import { ReceiptBenchmark } from '@ark/shared';
import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { BenchmarkOutputError, benchmarkFigures, parseBenchmarkOutput, round4 } from './benchmark-output.js';

const IMAGE = `127.0.0.1:5000/ark/selftest-bench@sha256:${'a'.repeat(64)}`;
// Recorded from the benchmark script on this machine's CPU (test/fixtures/selftest-bench/README.md).
const recorded = readFileSync(new URL('../../../test/fixtures/selftest-bench/cpu-output.jsonl', import.meta.url), 'utf8');

const line = (fields: Record<string, unknown>) =>
  JSON.stringify({
    ark_selftest_benchmark: 1,
    backend: 'cpu',
    threads: 1,
    model_params: 1_000_000,
    model_bytes: 4_000_000,
    load_seconds: 0.5,
    prompt_tokens: 500,
    prompt_seconds: 0.25,
    generation_tokens: 100,
    generation_seconds: 0.5,
    disk_bytes: 64_000_000,
    disk_write_seconds: 0.5,
    disk_read_seconds: 0.25,
    ...fields,
  });

describe('benchmarkFigures', () => {
  it('works the rates out of counts and seconds', () => {
    const figures = benchmarkFigures(parseBenchmarkOutput(line({})), IMAGE);
    expect(figures).toEqual({
      image: IMAGE,
      backend: 'cpu',
      // 500 tokens in 0.25 s = 2000 tokens/s; 2 x 1e6 params x 2000 / 1e9 = 4 GFLOP/s.
      prompt_tokens_per_s: 2000,
      matmul_gflops: 4,
      // 100 tokens in 0.5 s = 200 tokens/s; 4e6 bytes x 200 / 1e9 = 0.8 GB/s.
      generation_tokens_per_s: 200,
      memory_bandwidth_gbps: 0.8,
      model_params: 1_000_000,
      model_bytes: 4_000_000,
      // 64e6 bytes in 0.5 s and 0.25 s.
      disk_write_mbps: 128,
      disk_read_mbps: 256,
    });
  });

  it('adds the host-to-device rate where the GPU path measured it', () => {
    const gpu = benchmarkFigures(
      parseBenchmarkOutput(line({ backend: 'cuda', host_to_device_bytes: 2 * 1024 ** 3, host_to_device_seconds: 0.04 })),
      IMAGE,
    );
    expect(gpu.backend).toBe('cuda');
    expect(gpu.host_to_device_gbps).toBe(53.69);
  });

  it('gives the recorded CPU output in the shape the receipt schema accepts, each rate redone from its line', () => {
    const output = parseBenchmarkOutput(recorded);
    const figures = benchmarkFigures(output, IMAGE);
    expect(Value.Errors(ReceiptBenchmark, figures).First()).toBeUndefined();
    expect(figures.matmul_gflops).toBe(round4((2 * output.model_params * output.prompt_tokens) / output.prompt_seconds / 1e9));
    expect(figures.memory_bandwidth_gbps).toBe(round4((output.model_bytes * output.generation_tokens) / output.generation_seconds / 1e9));
    expect(figures.matmul_gflops).toBeGreaterThan(0);
    expect(figures.memory_bandwidth_gbps).toBeGreaterThan(0);
  });

  it('rounds to four significant digits', () => {
    expect(round4(123_456.7)).toBe(123_500);
    expect(round4(0.000123456)).toBe(0.0001235);
    expect(round4(0)).toBe(0);
    expect(round4(Number.POSITIVE_INFINITY)).toBe(0);
  });
});

describe('parseBenchmarkOutput', () => {
  it('takes the last figures line among other output', () => {
    const text = `loading\n{"not":"ours"}\n${line({ threads: 3 })}\nbye\n`;
    expect(parseBenchmarkOutput(text).threads).toBe(3);
  });

  it("refuses no figures, the benchmark's own error, and malformed figures", () => {
    expect(() => parseBenchmarkOutput('')).toThrow(new BenchmarkOutputError('the benchmark printed no figures'));
    expect(() => parseBenchmarkOutput('{"ark_selftest_benchmark":1,"error":"model did not load"}')).toThrow(
      'the benchmark failed: model did not load',
    );
    expect(() => parseBenchmarkOutput(line({ prompt_seconds: 0 }))).toThrow(/malformed at \/prompt_seconds/);
    expect(() => parseBenchmarkOutput(line({ ark_selftest_benchmark: 2 }))).toThrow(/malformed/);
  });
});
