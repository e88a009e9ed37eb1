// `ark-agent selftest` on real parts (issue 24 item 2): the agent's installed entry point as a process, the real
// benchmark image (test/engine/bench-image.ts: node-llama-cpp's CPU build on a generated model) pulled by digest from
// a loopback registry into a private dockerd and run through the job runtime, and the signed receipt it prints
// checked with the shared verifier against the machine's public key, as anyone holding that key would. Also: an
// image that is not the pinned digest never runs, and a benchmark that never finishes is bounded and reported failed.
// Last, the whole path on real parts: the control plane bundle asks a paired `ark-agent run` for its enrollment
// self-test, and the receipt the benchmark produced is stored, checked by `ark machines verify`, and scored in
// `ark offers search` and on the console's marketplace.
import { randomUUID } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { type HardwareReceiptBody, verifyHardwareReceipt } from '@ark/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBenchmarkImage } from '../engine/bench-image.js';
import { type DockerDaemon, isDockerAvailable, startDockerd } from '../harness/dockerd.js';
import { buildTestImage, startRegistry, type TestImage, type TestRegistry } from '../harness/images.js';
import { FakeControlPlane } from '@ark/host-agent/channel/testing/fake-control-plane';
import { type SpawnedProcess, spawnProcess, waitFor } from '../harness/processes.js';
import { ark, expectExit } from './cli-helpers.js';
import { agentBin, api, repoRoot, startAgent, waitWhileRunning } from './host-side-helpers.js';
import { agent, consolePage, type PairedMarketplace, pairedMarketplace, pairedStateDir } from './selftest-helpers.js';

describe.skipIf(!isDockerAvailable())('ark-agent selftest on a real Docker engine', () => {
  let daemon: DockerDaemon;
  let registry: TestRegistry;
  let bench: TestImage;
  let hung: TestImage;
  const machineId = randomUUID();
  let stateDir: string;
  let publicKey: string;
  let env: NodeJS.ProcessEnv;
  /** The last describe's control plane and paired machine, made while the cases before it run. */
  let marketplace: Promise<PairedMarketplace> | undefined;

  beforeAll(async () => {
    daemon = await startDockerd();
    registry = await startRegistry();
    [bench, hung] = await Promise.all([
      buildBenchmarkImage(daemon, registry),
      // Stands for a benchmark that never finishes: it sleeps an hour.
      buildTestImage(daemon, { registry, repository: 'ark-test/hung-bench', changes: ['CMD ["sleep", "3600"]'] }),
    ]);
    marketplace = pairedMarketplace(bench.digestRef, daemon.socketPath);
    // Awaited (and its failure reported) by the describe that uses it.
    marketplace.catch(() => undefined);
    // The agent pulls the benchmark by digest from the registry, as a host would.
    await daemon.docker(['rmi', bench.localRef, bench.ref]);
    ({ stateDir, publicKey } = await pairedStateDir(machineId));
    env = {
      ARK_AGENT_STATE_DIR: stateDir,
      ARK_AGENT_CONFIG: '',
      ARK_AGENT_DOCKER_SOCKET: daemon.socketPath,
      ARK_AGENT_SELFTEST_BENCHMARK_IMAGE: bench.digestRef,
      // No GPU here: an nvidia-smi that does not exist reads as none, the CPU path.
      ARK_AGENT_NVIDIA_SMI_PATH: join(stateDir, 'no-nvidia-smi'),
      ARK_AGENT_LOG_LEVEL: 'warn',
    };
  }, 240_000);

  afterAll(async () => {
    await (await marketplace?.catch(() => undefined))?.stop();
    await daemon?.stop();
    await registry?.stop();
    if (stateDir !== undefined) await rm(stateDir, { recursive: true, force: true });
  });

  async function selftestContainers(): Promise<string> {
    const { stdout } = await daemon.docker(['ps', '-a', '--filter', 'label=ark.selftest', '--format', '{{.Names}} {{.Status}}']);
    return stdout.trim();
  }

  it('runs the pinned benchmark through the job runtime and prints a receipt that verifies with the machine key', async () => {
    const run = await agent(['selftest', '--json'], env);
    expect(run.code, run.stderr).toBe(0);
    // One line on stdout, the signed receipt; logs go to stderr.
    expect(run.stdout.trim().split('\n')).toHaveLength(1);
    const signed = JSON.parse(run.stdout) as unknown;
    const check = verifyHardwareReceipt(signed, publicKey, machineId);
    if (!check.ok) throw new Error(`receipt refused: ${check.reason} ${check.detail ?? ''}`);
    const body: HardwareReceiptBody = check.body;
    expect(body).toMatchObject({ machine_id: machineId, receipt_seq: 1, trigger: 'manual', ok: true, gpus: [] });
    const benchmark = body.benchmark;
    expect(benchmark?.image).toBe(bench.digestRef);
    expect(benchmark?.backend).toBe('cpu');
    for (const rate of [
      'matmul_gflops',
      'memory_bandwidth_gbps',
      'prompt_tokens_per_s',
      'generation_tokens_per_s',
      'disk_write_mbps',
      'disk_read_mbps',
    ] as const) {
      expect(benchmark?.[rate]).toBeGreaterThan(0);
    }
    // The fixed model: 256-wide, 4 blocks, F32 (test/engine/bench-image.ts).
    expect(benchmark?.model_params).toBe(3_591_424);
    expect(benchmark?.model_bytes).toBe(3_591_424 * 4);
    // The score is the verifier's own arithmetic on the signed figures.
    expect(check.score).toBeGreaterThan(0);
    // One byte changed and the signature no longer holds.
    const { receipt, signature } = signed as { receipt: string; signature: string };
    expect(verifyHardwareReceipt({ receipt: receipt.replace('"ok":true', '"ok":false'), signature }, publicKey).ok).toBe(false);
    expect(await selftestContainers()).toBe('');
  }, 120_000);

  it('the daemon answers run_selftest over its channel with a hardware_receipt naming the command', async () => {
    // A control plane speaking the real wire protocol over a real socket (the real gateway's handler is the control
    // plane's side of this item); the agent is `ark-agent run` as a host runs it.
    const control = await FakeControlPlane.start();
    const daemonMachine = randomUUID();
    const paired = await pairedStateDir(daemonMachine, { url: control.url, controlPlanePublicKey: control.publicKeyBase64 });
    control.allow(daemonMachine, paired.publicKey);
    const daemonAgent = spawnProcess(process.execPath, [agentBin, 'run'], {
      cwd: repoRoot,
      env: { ...env, ARK_AGENT_STATE_DIR: paired.stateDir, ARK_AGENT_SELFTEST_BENCHMARK_IMAGE: '' },
    });
    try {
      await control.until(() => control.current?.welcomed === true, 30_000);
      control.current?.command(1, { trigger: 'command', timeout_ms: 60_000, benchmark_image: bench.digestRef }, 'run_selftest');
      await control.until(() => control.received.some((message) => message.t === 'hardware_receipt'), 60_000);
      const message = control.received.find((received) => received.t === 'hardware_receipt') as unknown as {
        receipt: string;
        signature: string;
      };
      const check = verifyHardwareReceipt({ receipt: message.receipt, signature: message.signature }, paired.publicKey, daemonMachine);
      if (!check.ok) throw new Error(`receipt refused: ${check.reason}`);
      expect(check.body).toMatchObject({
        trigger: 'command',
        command_id: '00000000-0000-4000-8000-000000000001',
        receipt_seq: 1,
        ok: true,
        benchmark: { image: bench.digestRef, backend: 'cpu' },
      });
      expect(check.body.benchmark?.matmul_gflops).toBeGreaterThan(0);
    } finally {
      await daemonAgent.stop('SIGTERM', { timeoutMs: 10_000 });
      await control.close();
      await rm(paired.stateDir, { recursive: true, force: true });
    }
    expect(await selftestContainers()).toBe('');
  }, 120_000);

  it('never runs an image that is not the pinned digest, and bounds a benchmark that never finishes', async () => {
    // Side by side, as a host might run them: a benchmark that never finishes (bounded at 10 s), a person's run of
    // the pinned image, and two images that are not the pin. Each receipt takes its own number.
    const hungRun = agent(['selftest', '--json', '--image', hung.digestRef], { ...env, ARK_AGENT_SELFTEST_TIMEOUT_S: '10' });
    const humanRun = agent(['selftest'], env);
    // The hung image's digest under the benchmark's name: the registry holds no such manifest there, so nothing is
    // pulled, and nothing runs.
    const wrong = await agent(['selftest', '--json', '--image', `${registry.address}/ark-test/selftest-bench@${hung.digest}`], env);
    // A tag is no pin at all: refused before any pull.
    const tagged = await agent(['selftest', '--json', '--image', bench.ref], env);
    const [hungResult, human] = await Promise.all([hungRun, humanRun]);

    const bodyOf = (run: { stdout: string }) => {
      const check = verifyHardwareReceipt(JSON.parse(run.stdout), publicKey, machineId);
      if (!check.ok) throw new Error(`receipt refused: ${check.reason}`);
      return check;
    };
    expect(wrong.code).toBe(1);
    expect(bodyOf(wrong).body).toMatchObject({ ok: false, error: expect.stringMatching(/pull/i) });
    expect(bodyOf(wrong).body.benchmark).toBeUndefined();
    expect(tagged.code).toBe(1);
    expect(bodyOf(tagged).body.error).toMatch(/not named by a sha256 digest/);

    expect(hungResult.code).toBe(1);
    const bounded = bodyOf(hungResult);
    expect(bounded.body.ok).toBe(false);
    expect(bounded.body.error).toBe('the self-test did not finish within 10 s (while running the benchmark)');
    expect(bounded.body.duration_ms).toBeGreaterThanOrEqual(10_000);
    expect(bounded.score).toBeNull();
    // Ended at the bound, not an hour later.
    expect(hungResult.ms).toBeLessThan(25_000);

    // For a person: the figures in words and the key to check them with.
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/result: +ok/);
    expect(human.stdout).toMatch(/matrix multiply: +[\d.]+ GFLOP\/s/);
    expect(human.stdout).toContain(publicKey);
    const humanSeq = Number(/receipt: +#(\d+) \(manual\)/.exec(human.stdout)?.[1]);
    const seqs = [bodyOf(wrong).body.receipt_seq, bodyOf(tagged).body.receipt_seq, bounded.body.receipt_seq, humanSeq];
    expect(new Set(seqs).size).toBe(4);
    expect(Math.min(...seqs)).toBe(2);
    // Nothing keeps running.
    expect(await selftestContainers()).toBe('');
  }, 60_000);

  // The Done-when line with every part real (issue 24 item 2): the control plane bundle asks the paired `ark-agent run`
  // for its enrollment self-test naming this file's benchmark image by digest (ARK_SELFTEST_IMAGE); the agent runs it
  // on the private dockerd and sends the signed receipt over its channel; the renter then checks it with `ark machines
  // verify`, sees its score in `ark offers search` and on the console's marketplace. Nothing here signs or makes up a
  // figure. The marketplace was started and the machine paired while the cases above ran (beforeAll).
  describe('a receipt from the real benchmark on the real control plane', () => {
    let site: PairedMarketplace;
    let daemonAgent: SpawnedProcess | undefined;

    beforeAll(async () => {
      if (marketplace === undefined) throw new Error('the marketplace was not started');
      site = await marketplace;
      // Started only now, so its self-test has the engine to itself.
      daemonAgent = startAgent(site.setup, ['run']);
    }, 120_000);

    afterAll(async () => {
      await daemonAgent?.stop('SIGTERM', { timeoutMs: 10_000 });
    });

    it('is stored, verifies with `ark machines verify`, and shows its score in `ark offers search` and the console', async () => {
      const { cp, machineId, renterEnv } = site;
      const agentProcess = daemonAgent as SpawnedProcess;
      const view = await waitWhileRunning(
        agentProcess,
        async () => {
          const answer = await api(cp.base, 'GET', `/api/v1/machines/${machineId}/verification`);
          return answer.status === 200 && answer.body.score !== null ? answer.body : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 200, description: 'the enrollment receipt in the public verification view' },
      ).catch((error: Error) => {
        throw new Error(`${error.message}\n--- agent ---\n${agentProcess.output()}\n--- control plane ---\n${cp.process.output()}`);
      });
      // Served under the key the agent made at pairing and keeps in its state directory.
      const identity = JSON.parse(await readFile(join(site.setup.stateDir, 'identity.json'), 'utf8'));
      expect(view.public_key).toBe(identity.public_key);
      expect(view.unlisted).toBe(false);
      expect(view.receipts).toHaveLength(1);
      const { receipt, signature } = view.receipts[0];
      const check = verifyHardwareReceipt({ receipt, signature }, identity.public_key, machineId);
      if (!check.ok) throw new Error(`receipt refused: ${check.reason} ${check.detail ?? ''}`);
      expect(check.body).toMatchObject({
        machine_id: machineId,
        receipt_seq: 1,
        trigger: 'enrollment',
        ok: true,
        gpus: [],
        benchmark: { image: bench.digestRef, backend: 'cpu' },
      });
      expect(check.body.command_id).toMatch(/^[0-9a-f-]{36}$/);
      expect(check.body.benchmark?.matmul_gflops).toBeGreaterThan(0);
      expect(check.body.benchmark?.memory_bandwidth_gbps).toBeGreaterThan(0);
      expect(check.score).toBeGreaterThan(0);
      expect(view.score).toBe(check.score);
      expect(view.verified_at).toBe(check.body.measured_at);
      // Nothing the agent sent was refused.
      const metrics = await (await fetch(`${cp.base}/metrics`)).text();
      expect(metrics.match(/^ark_hardware_receipts_refused_total\{.*\} [1-9]\d*$/m)).toBeNull();

      // The renter: `ark machines verify` against the served key and pinned to the agent's own, then the offers.
      const [served, pinned, offer] = await Promise.all([
        ark(['machines', 'verify', machineId, '--json'], { env: renterEnv }),
        ark(['machines', 'verify', machineId, '--public-key', identity.public_key], { env: renterEnv }),
        waitFor(
          async () => {
            const run = expectExit(await ark(['offers', 'search', '--json'], { env: renterEnv }), 0);
            return run.json.items.find((o: { machine_id: string }) => o.machine_id === machineId);
          },
          { timeoutMs: 30_000, intervalMs: 250, description: 'the machine’s offer in `ark offers search`' },
        ),
      ]);
      expect(expectExit(served, 0).json).toMatchObject({
        machine_id: machineId,
        public_key: identity.public_key,
        key_source: 'served',
        verified: true,
        score: check.score,
        verified_at: check.body.measured_at,
        receipts: [{ receipt_seq: 1, ok: true, problem: null, score: check.score }],
      });
      expect(expectExit(pinned, 0).stderr).toContain(`Verified: 1 receipt(s) signed by ${identity.public_key}; score ${check.score}.`);
      expect(offer.verification).toEqual({ score: check.score, verified_at: check.body.measured_at });

      // The console's marketplace, signed in through its own form as the renter.
      const page = await consolePage(cp.base, site.renterEmail, site.renterPassword, '/console/offers');
      const row = new RegExp(`<tr data-machine-id="${machineId}"[^>]*>[\\s\\S]*?</tr>`).exec(page)?.[0];
      expect(row, page).toBeDefined();
      expect(row).toContain(`<td data-label="Score" class="score">${check.score}</td>`);
      expect(row).toContain(`<a href="/api/v1/machines/${machineId}/verification">`);
      expect(await selftestContainers()).toBe('');
    }, 90_000);
  });
});
