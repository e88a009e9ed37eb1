import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ManualClock, type JobLimits, verifyHardwareReceipt } from '@ark/shared';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { nodeSigner } from '../channel/signer.js';
import { RecordedGpuCollector } from '../collectors/recorded-gpu-collector.js';
import { ContainerRuntimeError, type ContainerRuntime, type ContainerSpec } from '../runtime/container-runtime.js';
import { BenchmarkRunner } from './benchmark-runner.js';
import { nextReceiptSeq, readLastReceiptSeq, RECEIPT_SEQ_FILE } from './receipt-seq.js';
import { runSelftest, type SelftestParts } from './selftest.js';
import { SelftestService, type HardwareReceiptBody } from './selftest-service.js';

const MACHINE = '0b6f3f4e-8f2a-4d6e-9c1a-2f1e5d7c9a01';
const COMMAND = '5c1d7a52-3b8e-4f0e-8d61-0a9b7c6e5f42';
const JOB = '9e8d7c6b-5a49-4382-9170-6f5e4d3c2b1a';
const IMAGE = `127.0.0.1:5000/ark/selftest-bench@sha256:${'b'.repeat(64)}`;
const LIMITS: JobLimits = { nano_cpus: 2_500_000_000, memory_bytes: String(2 * 1024 ** 3), pids: 4096 };
const recordedLine = readFileSync(new URL('../../../test/fixtures/selftest-bench/cpu-output.jsonl', import.meta.url), 'utf8');
const l4 = readFileSync(new URL('../../../test/fixtures/nvidia-smi/l4-x2-driver-555.xml', import.meta.url), 'utf8');

import { readFileSync } from 'node:fs';

/** A tweetnacl-style key pair as identity.json holds it. */
function machineKey(): { secretKey: Uint8Array; publicKey: string } {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(12);
  const seed = privateKey.export({ format: 'der', type: 'pkcs8' }).subarray(16);
  return { secretKey: new Uint8Array(Buffer.concat([seed, raw])), publicKey: raw.toString('base64') };
}

type Behaviour = 'finishes' | 'hangs' | 'fails' | 'refuses-digest';

/** The ContainerRuntime calls a benchmark makes, with a container that finishes, hangs, fails or is never pulled. */
class FakeRuntime {
  readonly calls: string[] = [];
  specs: ContainerSpec[] = [];
  running = false;
  constructor(
    readonly behaviour: Behaviour,
    readonly clock: ManualClock,
  ) {}
  async pullImage(reference: string) {
    this.calls.push(`pull ${reference}`);
    if (this.behaviour === 'refuses-digest') {
      throw new ContainerRuntimeError('IMAGE_DIGEST_MISMATCH', 'pulled image does not carry digest sha256:bbbb');
    }
    return { id: 'sha256:image', repoDigests: [reference], pulled: true };
  }
  async ensureVolume(name: string) {
    this.calls.push(`volume ${name.slice(0, 13)}`);
  }
  async createContainer(spec: ContainerSpec) {
    this.specs.push(spec);
    this.calls.push('create');
    return 'container-1';
  }
  async startContainer() {
    this.calls.push('start');
    this.running = true;
  }
  async inspectContainer() {
    if (this.behaviour === 'hangs' || !this.running) return { id: 'container-1', name: 'x', status: 'running', running: true, labels: {} };
    return { id: 'container-1', name: 'x', status: 'exited', running: false, exitCode: this.behaviour === 'fails' ? 1 : 0, labels: {} };
  }
  async containerLogs() {
    return this.behaviour === 'fails'
      ? '{"ark_selftest_benchmark":1,"error":"model did not load"}\n'
      : `llama.cpp says hello\n${recordedLine}`;
  }
  async removeContainer() {
    this.calls.push('remove');
    this.running = false;
  }
  async removeVolume() {
    this.calls.push('remove volume');
  }
}

describe('runSelftest', () => {
  let stateDir: string;
  let clock: ManualClock;
  const key = machineKey();

  beforeEach(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'ark-selftest-unit-'));
    clock = new ManualClock('2026-11-27T12:00:00.000Z');
  });
  afterEach(async () => {
    await rm(stateDir, { recursive: true, force: true });
  });

  function parts(runtime: FakeRuntime, gpus: string[] = []): SelftestParts {
    return {
      machineId: MACHINE,
      identity: new RecordedGpuCollector(gpus),
      machine: async () => ({ cpu: { model: 'Test CPU', cores: 4 }, ram_bytes: 8 * 1024 ** 3 }),
      benchmark: new BenchmarkRunner({ runtime: runtime as unknown as ContainerRuntime, clock, jobLimits: LIMITS, pollIntervalMs: 100 }),
      benchmarkImage: IMAGE,
      nextSeq: () => nextReceiptSeq(stateDir),
      sign: nodeSigner(key.secretKey),
      clock,
    };
  }

  /** Runs the self-test while moving the manual clock along, as real time would. */
  async function drive<T>(work: Promise<T>, stepMs = 100): Promise<T> {
    let done = false;
    const result = work.finally(() => {
      done = true;
    });
    while (!done) {
      await new Promise((resolve) => setImmediate(resolve));
      if (!done) await clock.advance(stepMs);
    }
    return result;
  }

  it('signs a receipt of the benchmark run as a confined job, which verifies with the machine key', async () => {
    const runtime = new FakeRuntime('finishes', clock);
    const outcome = await drive(runSelftest(parts(runtime), { trigger: 'manual', timeoutMs: 60_000, benchmark: true }));
    const check = verifyHardwareReceipt(outcome.signed, key.publicKey, MACHINE);
    if (!check.ok) throw new Error(check.reason);
    expect(check.body).toEqual(outcome.body);
    expect(check.body).toMatchObject({ receipt_seq: 1, trigger: 'manual', ok: true, gpus: [], cpu: { model: 'Test CPU', cores: 4 } });
    expect(check.body.benchmark?.image).toBe(IMAGE);
    expect(check.body.benchmark?.matmul_gflops).toBeGreaterThan(0);
    expect(check.score).toBeGreaterThan(0);
    // Pulled by digest, confined like a job (limits, no network), then removed with its volume.
    expect(runtime.calls).toEqual([`pull ${IMAGE}`, 'volume ark-selftest-', 'create', 'start', 'remove', 'remove volume']);
    const [spec] = runtime.specs;
    expect(spec).toMatchObject({
      image: IMAGE,
      networkMode: 'none',
      gpuDeviceIds: [],
      limits: { nanoCpus: 2_500_000_000, memoryBytes: 2 * 1024 ** 3, pids: 4096 },
      env: { BENCH_BACKEND: 'cpu', BENCH_THREADS: '2', BENCH_DISK_DIR: '/workspace' },
    });
    expect(spec?.labels['ark.job_id']).toBeUndefined();
    // A tampered receipt does not verify; neither does one checked against another machine's key.
    expect(
      verifyHardwareReceipt({ ...outcome.signed, receipt: outcome.signed.receipt.replace('"cores":4', '"cores":8') }, key.publicKey).ok,
    ).toBe(false);
    expect(verifyHardwareReceipt(outcome.signed, machineKey().publicKey).ok).toBe(false);
  });

  it('asks for the GPUs nvidia-smi lists, on the CUDA path', async () => {
    const runtime = new FakeRuntime('finishes', clock);
    const outcome = await drive(runSelftest(parts(runtime, [l4]), { trigger: 'daily', timeoutMs: 60_000, benchmark: true }));
    expect(outcome.body.gpus).toHaveLength(2);
    expect(runtime.specs[0]?.gpuDeviceIds).toEqual([
      'GPU-c5533cd4-5a60-059e-348d-b6d7466932e4',
      'GPU-128ab6fb-6ec9-fd74-b479-4a5fd14f55bd',
    ]);
    expect(runtime.specs[0]?.env.BENCH_BACKEND).toBe('cuda');
  });

  it('never runs an image the engine does not hold under the pinned digest, nor one named by tag', async () => {
    const refusing = new FakeRuntime('refuses-digest', clock);
    const refused = await drive(runSelftest(parts(refusing), { trigger: 'manual', timeoutMs: 60_000, benchmark: true }));
    expect(refused.body).toMatchObject({ ok: false, error: 'pulled image does not carry digest sha256:bbbb' });
    expect(refused.body.benchmark).toBeUndefined();
    expect(refusing.calls).toEqual([`pull ${IMAGE}`]);

    const tagged = new FakeRuntime('finishes', clock);
    const byTag = await drive(
      runSelftest(parts(tagged), {
        trigger: 'manual',
        timeoutMs: 60_000,
        benchmark: true,
        benchmarkImage: 'registry.example/bench:latest',
      }),
    );
    expect(byTag.body.error).toBe('benchmark image registry.example/bench:latest is not named by a sha256 digest');
    expect(tagged.calls).toEqual([]);
  });

  it('bounds a benchmark that never finishes: failed at the timeout, its container removed', async () => {
    const runtime = new FakeRuntime('hangs', clock);
    const outcome = await drive(runSelftest(parts(runtime), { trigger: 'manual', timeoutMs: 30_000, benchmark: true }), 1_000);
    expect(outcome.body).toMatchObject({ ok: false, error: 'the self-test did not finish within 30 s (while running the benchmark)' });
    expect(outcome.body.duration_ms).toBe(30_000);
    expect(runtime.calls.slice(-2)).toEqual(['remove', 'remove volume']);
    expect(runtime.running).toBe(false);
    expect(verifyHardwareReceipt(outcome.signed, key.publicKey).ok).toBe(true);
  });

  it("reports the benchmark's own failure, signed", async () => {
    const outcome = await drive(
      runSelftest(parts(new FakeRuntime('fails', clock)), { trigger: 'manual', timeoutMs: 60_000, benchmark: true }),
    );
    expect(outcome.body.error).toBe('the benchmark exited with code 1: the benchmark failed: model did not load');
  });

  it('never hands out one number twice, even to concurrent takers of the same state directory', async () => {
    const other = new Map<number, number>();
    const taken = await Promise.all(Array.from({ length: 20 }, (_, i) => nextReceiptSeq(i % 2 === 0 ? stateDir : `${stateDir}/.`)));
    for (const seq of taken) other.set(seq, (other.get(seq) ?? 0) + 1);
    expect([...other.keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
  });

  it('numbers receipts from the persisted counter and refuses a damaged one rather than restart at 1', async () => {
    const p = parts(new FakeRuntime('finishes', clock));
    const seqs: number[] = [];
    for (let i = 0; i < 3; i += 1)
      seqs.push((await runSelftest(p, { trigger: 'job_start', jobId: JOB, timeoutMs: 10_000, benchmark: false })).body.receipt_seq);
    expect(seqs).toEqual([1, 2, 3]);
    expect(await readLastReceiptSeq(stateDir)).toBe(3);
    expect(JSON.parse(await readFile(join(stateDir, RECEIPT_SEQ_FILE), 'utf8'))).toEqual({ version: 1, last: 3 });
    await writeFile(join(stateDir, RECEIPT_SEQ_FILE), '{"last":"x"}');
    await expect(nextReceiptSeq(stateDir)).rejects.toThrow(/damaged/);
  });
});

describe('SelftestService', () => {
  let stateDir: string;
  const key = machineKey();
  const logger = { info: () => undefined, warn: () => undefined };

  beforeEach(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'ark-selftest-service-'));
  });
  afterEach(async () => {
    await rm(stateDir, { recursive: true, force: true });
  });

  function service(gpus: string[], runtime: FakeRuntime, clock: ManualClock) {
    const queued: HardwareReceiptBody[] = [];
    const svc = new SelftestService({
      parts: {
        machineId: MACHINE,
        identity: new RecordedGpuCollector(gpus),
        machine: async () => ({ cpu: { model: 'Test CPU', cores: 2 }, ram_bytes: 1024 ** 3 }),
        benchmark: new BenchmarkRunner({ runtime: runtime as unknown as ContainerRuntime, clock, pollIntervalMs: 0 }),
        nextSeq: () => nextReceiptSeq(stateDir),
        sign: nodeSigner(key.secretKey),
        clock,
      },
      enqueue: (body) => {
        queued.push(body);
      },
      logger,
    });
    return { svc, queued };
  }

  it('answers run_selftest with a signed hardware_receipt naming the command', async () => {
    const clock = new ManualClock();
    const { svc, queued } = service([], new FakeRuntime('finishes', clock), clock);
    svc.submit(COMMAND, { trigger: 'command', timeout_ms: 60_000, benchmark_image: IMAGE });
    await svc.idle();
    expect(queued).toHaveLength(1);
    const [message] = queued;
    expect(message?.t).toBe('hardware_receipt');
    const check = verifyHardwareReceipt({ receipt: message?.receipt, signature: message?.signature }, key.publicKey, MACHINE);
    if (!check.ok) throw new Error(check.reason);
    expect(check.body).toMatchObject({ trigger: 'command', command_id: COMMAND, ok: true, benchmark: { image: IMAGE } });
    expect(svc.lastReceipt()?.receipt_seq).toBe(1);
  });

  it('answers a run_selftest without a benchmark image (none configured either) with identity only, not a failure', async () => {
    const clock = new ManualClock();
    const { svc, queued } = service([], new FakeRuntime('finishes', clock), clock);
    svc.submit(COMMAND, { trigger: 'enrollment', timeout_ms: 60_000 });
    await svc.idle();
    const [message] = queued;
    const check = verifyHardwareReceipt({ receipt: message?.receipt, signature: message?.signature }, key.publicKey, MACHINE);
    if (!check.ok) throw new Error(check.reason);
    expect(check.body).toMatchObject({ trigger: 'enrollment', command_id: COMMAND, ok: true });
    expect(check.body.benchmark).toBeUndefined();
    expect(check.body.error).toBeUndefined();
  });

  it('fails a job start whose assigned GPU nvidia-smi does not list, with a signed job_start receipt saying so', async () => {
    const clock = new ManualClock();
    const runtime = new FakeRuntime('finishes', clock);
    const { svc, queued } = service([l4], runtime, clock);
    expect(await svc.checkJobStart(JOB, ['0000:01:00.0', '0000:c1:00.0'])).toBeUndefined();
    const problem = await svc.checkJobStart(JOB, ['0000:3b:00.0']);
    expect(problem).toMatch(/^GPU identity check failed: assigned GPU 0000:3b:00.0 not found by nvidia-smi/);
    const bodies = queued.map((message) => {
      const check = verifyHardwareReceipt({ receipt: message.receipt, signature: message.signature }, key.publicKey, MACHINE);
      if (!check.ok) throw new Error(check.reason);
      return check.body;
    });
    expect(bodies.map((body) => [body.receipt_seq, body.trigger, body.job_id, body.ok, body.gpus.length])).toEqual([
      [1, 'job_start', JOB, true, 2],
      [2, 'job_start', JOB, false, 2],
    ]);
    expect(bodies[1]?.error).toBe(problem);
    // Identity only: no benchmark at a job start.
    expect(bodies.every((body) => body.benchmark === undefined)).toBe(true);
    expect(runtime.calls).toEqual([]);
  });
});
