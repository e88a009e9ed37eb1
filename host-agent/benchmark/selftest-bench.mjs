// The self-test's benchmark (issue 24 item 2), run inside the benchmark image by the agent's job runtime, pulled by
// digest and confined like any job. llama.cpp through node-llama-cpp on a generated model of fixed size (random
// weights, F32): prompt processing of a fixed prompt measures dense matrix multiplication, generation of a fixed
// number of tokens measures memory bandwidth (each token reads every weight once). Then a fixed-size write (fsync)
// and read back in the job's volume. On a machine with GPUs (BENCH_BACKEND=cuda) the same script loads the model
// onto the GPU with node-llama-cpp's CUDA build; without, its CPU build.
//
// Prints exactly one JSON line (the format host-agent/src/selftest/benchmark-output.ts parses): raw counts and
// seconds, never a rate, so the agent (and anyone reading the receipt) does the arithmetic. Exit 0 on success; on a
// failure it prints {"ark_selftest_benchmark":1,"error":"..."} and exits 1.
import { randomFillSync } from 'node:crypto';
import { open, rm, stat } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { getLlama } from 'node-llama-cpp';

const FORMAT = 1;
const modelPath = process.env.BENCH_MODEL_PATH ?? '/bench/model.gguf';
const backend = process.env.BENCH_BACKEND === 'cuda' ? 'cuda' : 'cpu';
const promptTokens = positive(process.env.BENCH_PROMPT_TOKENS, 512);
const generationTokens = positive(process.env.BENCH_GENERATION_TOKENS, 128);
const diskBytes = positive(process.env.BENCH_DISK_BYTES, 64 * 1024 * 1024);
const diskDirectory = process.env.BENCH_DISK_DIR ?? '/workspace';
// The CPUs the job's limits leave it (BENCH_THREADS from the agent), else what the container sees.
const threads = positive(process.env.BENCH_THREADS, availableParallelism());
const seconds = (startNs) => Number(process.hrtime.bigint() - startNs) / 1e9;

function positive(text, fallback) {
  const value = Number(text);
  return Number.isInteger(value) && value > 0 ? value : fallback;
}

/** Elements and weight bytes of every tensor, from the GGUF header node-llama-cpp read (F32 and F16 only). */
function weights(fileInfo) {
  const bytesPer = { 0: 4, 1: 2 };
  let params = 0;
  let bytes = 0;
  for (const tensor of fileInfo.tensorInfo ?? []) {
    const elements = tensor.dimensions.reduce((product, dim) => product * Number(dim), 1);
    params += elements;
    const per = bytesPer[tensor.ggmlType];
    if (per === undefined) throw new Error(`tensor ${tensor.name} has type ${tensor.ggmlType}; the benchmark model is F32`);
    bytes += elements * per;
  }
  return { params, bytes };
}

async function measureModel() {
  const loadStart = process.hrtime.bigint();
  const llama = await getLlama({
    gpu: backend === 'cuda' ? 'cuda' : false,
    build: 'never',
    usePrebuiltBinaries: true,
    progressLogs: false,
    logLevel: 'error',
  });
  const model = await llama.loadModel({ modelPath, gpuLayers: backend === 'cuda' ? 'max' : 0 });
  const context = await model.createContext({
    contextSize: promptTokens + generationTokens + 16,
    batchSize: promptTokens,
    sequences: 1,
    threads,
  });
  const loadSeconds = seconds(loadStart);
  const { params, bytes } = weights(model.fileInfo);
  // A fixed prompt: the printable characters' tokens in turn (the vocabulary's last 95 entries), after BOS.
  const vocabulary = model.fileInfo.metadata.tokenizer.ggml.tokens.length;
  const prompt = [1];
  while (prompt.length < promptTokens) prompt.push(vocabulary - 95 + ((prompt.length * 7) % 95));
  const sequence = context.getSequence();
  // One untimed token first, so the timed prompt pays no first-call set-up.
  await sequence.evaluateWithoutGeneratingNewTokens([1]);
  await sequence.clearHistory();
  const promptStart = process.hrtime.bigint();
  await sequence.evaluateWithoutGeneratingNewTokens(prompt);
  const promptSeconds = seconds(promptStart);
  await sequence.clearHistory();
  let generated = 0;
  const generationStart = process.hrtime.bigint();
  for await (const _token of sequence.evaluate([1], { temperature: 0 })) {
    generated += 1;
    if (generated >= generationTokens) break;
  }
  const generationSeconds = seconds(generationStart);
  await context.dispose();
  await model.dispose();
  await llama.dispose();
  return { params, bytes, loadSeconds, promptSeconds, generated, generationSeconds };
}

/** Writes `diskBytes` in 1 MiB blocks and fsyncs, then reads them back; the file is removed after. */
async function measureDisk() {
  const path = join(diskDirectory, `.ark-selftest-${process.pid}.bin`);
  const block = Buffer.alloc(1024 * 1024);
  randomFillSync(block);
  const writeStart = process.hrtime.bigint();
  const writer = await open(path, 'w', 0o600);
  try {
    for (let written = 0; written < diskBytes; written += block.length) {
      await writer.write(block, 0, Math.min(block.length, diskBytes - written));
    }
    await writer.sync();
  } finally {
    await writer.close();
  }
  const writeSeconds = seconds(writeStart);
  const readStart = process.hrtime.bigint();
  const reader = await open(path, 'r');
  let read = 0;
  try {
    for (;;) {
      const { bytesRead } = await reader.read(block, 0, block.length, null);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
  } finally {
    await reader.close();
  }
  const readSeconds = seconds(readStart);
  const size = (await stat(path)).size;
  await rm(path, { force: true });
  if (read !== diskBytes || size !== diskBytes) throw new Error(`disk: wrote ${diskBytes} bytes, found ${size}, read ${read}`);
  return { writeSeconds, readSeconds };
}

try {
  const started = process.hrtime.bigint();
  const model = await measureModel();
  const disk = await measureDisk();
  process.stdout.write(
    `${JSON.stringify({
      ark_selftest_benchmark: FORMAT,
      backend,
      threads,
      model_params: model.params,
      model_bytes: model.bytes,
      load_seconds: model.loadSeconds,
      prompt_tokens: promptTokens,
      prompt_seconds: model.promptSeconds,
      generation_tokens: model.generated,
      generation_seconds: model.generationSeconds,
      disk_bytes: diskBytes,
      disk_write_seconds: disk.writeSeconds,
      disk_read_seconds: disk.readSeconds,
      total_seconds: seconds(started),
    })}\n`,
  );
} catch (error) {
  process.stdout.write(`${JSON.stringify({ ark_selftest_benchmark: FORMAT, error: String(error?.message ?? error).slice(0, 400) })}\n`);
  process.exitCode = 1;
}
