// The self-test on this machine (issue 24 item 2): `ark-agent selftest --json` as a host runs it, on the real
// benchmark image (test/engine/bench-image.ts: node-llama-cpp's CPU build on the fixed generated model) pulled by
// digest into a private dockerd and run through the job runtime under this machine's job limits. Rounds (default 3),
// each receipt verified against the machine's public key; the median duration of a whole self-test and the median
// of each figure. `--record FILE` also runs the image once with `docker run` and writes its raw JSON line there
// (test/fixtures/selftest-bench/).
// Run: pnpm exec tsx test/bench/selftest.bench.ts [--rounds 3] [--record FILE]
import { randomUUID } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { type ReceiptBenchmark, verifyHardwareReceipt } from '@ark/shared';
import { buildBenchmarkImage } from '../engine/bench-image.js';
import { startDockerd } from '../harness/dockerd.js';
import { startRegistry } from '../harness/images.js';
import { agent, pairedStateDir } from '../e2e/selftest-helpers.js';

export interface SelftestFigures {
  rounds: number;
  selftestMedianS: number;
  selftestMaxS: number;
  backend: string;
  matmulGflops: number;
  memoryBandwidthGbps: number;
  promptTokensPerS: number;
  generationTokensPerS: number;
  diskWriteMbps: number;
  diskReadMbps: number;
  score: number;
  modelParams: number;
  modelBytes: number;
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
};

export async function run(options: { rounds?: number; record?: string; log?: (line: string) => void } = {}): Promise<SelftestFigures> {
  const rounds = Math.max(1, Math.min(20, options.rounds ?? 3));
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const daemon = await startDockerd();
  const registry = await startRegistry();
  const machineId = randomUUID();
  const { stateDir, publicKey } = await pairedStateDir(machineId);
  try {
    const image = await buildBenchmarkImage(daemon, registry);
    await daemon.docker(['rmi', image.localRef, image.ref]);
    if (options.record !== undefined) {
      const { stdout } = await daemon.docker([
        'run',
        '--rm',
        '--network',
        'none',
        '--cpus',
        '1',
        '-e',
        'BENCH_THREADS=1',
        '-e',
        'BENCH_DISK_DIR=/tmp',
        image.digestRef,
      ]);
      await writeFile(options.record, `${stdout.trim().split('\n').at(-1)}\n`);
      log(`recorded the benchmark's line in ${options.record}`);
    }
    const env = {
      ARK_AGENT_STATE_DIR: stateDir,
      ARK_AGENT_CONFIG: '',
      ARK_AGENT_DOCKER_SOCKET: daemon.socketPath,
      ARK_AGENT_SELFTEST_BENCHMARK_IMAGE: image.digestRef,
      ARK_AGENT_NVIDIA_SMI_PATH: join(stateDir, 'no-nvidia-smi'),
      ARK_AGENT_LOG_LEVEL: 'error',
    };
    const seconds: number[] = [];
    const bodies: Array<ReceiptBenchmark & { score: number }> = [];
    for (let round = 0; round < rounds; round += 1) {
      const result = await agent(['selftest', '--json'], env, 300_000);
      if (result.code !== 0) throw new Error(`ark-agent selftest exited ${result.code}: ${result.stdout}${result.stderr}`);
      const check = verifyHardwareReceipt(JSON.parse(result.stdout), publicKey, machineId);
      if (!check.ok || check.body.benchmark === undefined) throw new Error(`receipt refused or without figures: ${result.stdout}`);
      // The whole command as a host waits for it (process start, pull check, benchmark, signing).
      seconds.push(result.ms / 1000);
      bodies.push({ ...check.body.benchmark, score: check.score ?? 0 });
      log(
        `round ${round + 1}: ${(result.ms / 1000).toFixed(1)} s, ${check.body.benchmark.matmul_gflops} GFLOP/s, ${check.body.benchmark.memory_bandwidth_gbps} GB/s`,
      );
    }
    const pick = (
      key:
        | 'matmul_gflops'
        | 'memory_bandwidth_gbps'
        | 'prompt_tokens_per_s'
        | 'generation_tokens_per_s'
        | 'disk_write_mbps'
        | 'disk_read_mbps'
        | 'score',
    ) => median(bodies.map((body) => body[key]));
    const first = bodies[0];
    return {
      rounds,
      selftestMedianS: median(seconds),
      selftestMaxS: Math.max(...seconds),
      backend: first?.backend ?? 'none',
      matmulGflops: pick('matmul_gflops'),
      memoryBandwidthGbps: pick('memory_bandwidth_gbps'),
      promptTokensPerS: pick('prompt_tokens_per_s'),
      generationTokensPerS: pick('generation_tokens_per_s'),
      diskWriteMbps: pick('disk_write_mbps'),
      diskReadMbps: pick('disk_read_mbps'),
      score: pick('score'),
      modelParams: first?.model_params ?? 0,
      modelBytes: first?.model_bytes ?? 0,
    };
  } finally {
    await daemon.stop();
    await registry.stop();
    await rm(stateDir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { values } = parseArgs({ options: { rounds: { type: 'string' }, record: { type: 'string' } } });
  const figures = await run({
    ...(values.rounds === undefined ? {} : { rounds: Number(values.rounds) }),
    ...(values.record === undefined ? {} : { record: values.record }),
  });
  process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
  process.exit(0);
}
