// The self-test's benchmark image (issue 24 item 2), built like the llama engine's (test/engine/llama-image.ts: this
// machine's Node, node-llama-cpp with its prebuilt CPU build, their libraries) with the agent's benchmark script
// (host-agent/benchmark/selftest-bench.mjs) as its command and a generated model of fixed size, and pushed to the
// loopback registry so the agent pulls it by digest like a job image. A real host's image is built the same way with
// node-llama-cpp's CUDA build added (host-agent/README.md "Self-test and hardware receipts").
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DockerDaemon } from '../harness/dockerd.js';
import { buildTestImage, type TestImage, type TestRegistry } from '../harness/images.js';
import { llamaRootfs } from './llama-image.js';
import { type TinyModelShape, tinyLlamaGguf } from './tiny-gguf.js';

const SCRIPT_PATH = fileURLToPath(new URL('../../host-agent/benchmark/selftest-bench.mjs', import.meta.url));

/**
 * The benchmark model: 256-wide embeddings, 4 blocks of a 768-wide feed-forward, F32 (3,591,424 parameters, 14.4 MB
 * of weights). Large enough that a token's work dwarfs the per-call overhead (the 0.4 MB chat test model's does not),
 * small enough to load and run in a few seconds on one of this machine's 2 cores.
 */
export const BENCH_MODEL_SHAPE: TinyModelShape = { embedding: 256, heads: 4, blocks: 4, feedForward: 768, contextLength: 2048 };
export const BENCH_MODEL_SEED = 20261127;

/** Builds the benchmark image in `daemon` and pushes it (to `registry`, or to a new one). */
export async function buildBenchmarkImage(daemon: DockerDaemon, registry?: TestRegistry): Promise<TestImage> {
  const work = await mkdtemp(join(tmpdir(), 'ark-bench-'));
  try {
    const modelFile = join(work, 'model.gguf');
    await writeFile(modelFile, tinyLlamaGguf(BENCH_MODEL_SEED, BENCH_MODEL_SHAPE));
    // The script imports node-llama-cpp from /bench/node_modules, beside it.
    const rootfs = await llamaRootfs('/bench/node_modules');
    return await buildTestImage(daemon, {
      repository: 'ark-test/selftest-bench',
      ...(registry === undefined ? {} : { registry }),
      copies: { ...rootfs.copies, '/bench/model.gguf': modelFile },
      trees: rootfs.trees,
      symlinks: rootfs.symlinks,
      files: { '/bench/selftest-bench.mjs': await readFile(SCRIPT_PATH, 'utf8') },
      changes: [
        'CMD ["/usr/local/bin/node", "/bench/selftest-bench.mjs"]',
        'ENV PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
        'ENV BENCH_MODEL_PATH=/bench/model.gguf',
        'WORKDIR /bench',
      ],
    });
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
