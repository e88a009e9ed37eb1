// One self-test (issue 24 item 2): GPU identity from nvidia-smi, then (unless identity only) the benchmark image run
// through the job runtime, then the network figures when the daemon has them, signed with the machine's key as a
// hardware receipt (shared/src/channel/receipts.ts). The whole run is bounded: past its timeout it ends with a signed
// receipt that says it failed and why, never a hang. A part that fails makes the receipt `ok: false` with the reason;
// it is still signed and reported, because a machine that cannot prove itself is news the control plane needs.
import {
  type Clock,
  HARDWARE_RECEIPT_VERSION,
  type HardwareReceiptBody,
  type ReceiptNetwork,
  type SelftestTrigger,
  type SignedHardwareReceipt,
  signHardwareReceipt,
} from '@ark/shared';
import type { GpuIdentity, GpuIdentitySource } from '../collectors/gpu-identity.js';
import { errorText } from '../jobs/text.js';
import type { BenchmarkOutput } from './benchmark-output.js';
import type { BenchmarkRunner } from './benchmark-runner.js';

export type SelftestMachine = { cpu: { model: string; cores: number }; ram_bytes: number };

/** What a self-test reads and runs; the CLI and the daemon build one from the same parts. */
export type SelftestParts = {
  machineId: string;
  identity: GpuIdentitySource;
  machine: () => Promise<SelftestMachine>;
  /** The benchmark through the job runtime; absent where no container engine is configured. */
  benchmark?: BenchmarkRunner;
  /** The pinned benchmark image (`name@sha256:...`) when the host configured one; a run_selftest may name its own. */
  benchmarkImage?: string;
  /** The network figures (the agent's network test), when there are any to give. */
  network?: () => Promise<ReceiptNetwork | undefined>;
  /** Takes the next receipt_seq, persisted before it is used (receipt-seq.ts). */
  nextSeq: () => Promise<number>;
  /** ed25519 over the receipt's bytes with the machine's key (the agent's channel signer). */
  sign: (bytes: Uint8Array) => Uint8Array;
  clock: Clock;
};

export type SelftestRequest = {
  trigger: SelftestTrigger;
  /** Bound on the whole run, signing excluded. */
  timeoutMs: number;
  commandId?: string;
  jobId?: string;
  /** False: identity only (the job-start check). */
  benchmark: boolean;
  /** The image a run_selftest command pins; else the configured one. */
  benchmarkImage?: string;
  /** A further check on the identity read (a job's assigned GPUs): its problem fails the receipt. */
  checkIdentity?: (identity: GpuIdentity) => string | undefined;
  /** How long a benchmark cut off by the timeout is given to remove its container (default 15 s). */
  cleanupGraceMs?: number;
};

export type SelftestOutcome = {
  body: HardwareReceiptBody;
  signed: SignedHardwareReceipt;
  /** The benchmark's own line, when it ran to the end. */
  benchmarkOutput?: BenchmarkOutput;
};

export class SelftestTimeout extends Error {
  override name = 'SelftestTimeout';
}

const ERROR_MAX_CHARS = 500;
/** How long a cut-off benchmark is given to stop and remove its container. */
const CLEANUP_GRACE_MS = 15_000;
const noop = () => undefined;

export async function runSelftest(parts: SelftestParts, request: SelftestRequest): Promise<SelftestOutcome> {
  const { clock } = parts;
  const startedAt = clock.now();
  const startedMs = clock.monotonicMs();
  const controller = new AbortController();
  let phase = 'reading GPU identity';
  const timer = clock.setTimeout(() => {
    controller.abort(new SelftestTimeout(`the self-test did not finish within ${Math.round(request.timeoutMs / 1000)} s (while ${phase})`));
  }, request.timeoutMs);
  // Every step races the deadline: a wedged driver or engine ends the run at the timeout, whatever it does after.
  const aborted = new Promise<never>((_, reject) => {
    controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true });
  });
  aborted.catch(() => undefined);
  const bounded = <T>(work: Promise<T>): Promise<T> => Promise.race([work, aborted]);

  let identity: GpuIdentity = { gpus: [] };
  let machine: SelftestMachine = { cpu: { model: 'unknown CPU', cores: 1 }, ram_bytes: 0 };
  let benchmark: HardwareReceiptBody['benchmark'];
  let benchmarkOutput: BenchmarkOutput | undefined;
  let network: ReceiptNetwork | undefined;
  let error: string | undefined;
  let benchmarkRun: Promise<unknown> | undefined;
  try {
    identity = await bounded(parts.identity.identity());
    phase = 'reading the machine';
    machine = await bounded(parts.machine());
    const problem = request.checkIdentity?.(identity);
    if (problem !== undefined) throw new Error(problem);
    if (request.benchmark) {
      phase = 'running the benchmark';
      const image = request.benchmarkImage ?? parts.benchmarkImage;
      if (image === undefined) throw new Error('no benchmark image is configured (selftest_benchmark_image) or named by the command');
      if (parts.benchmark === undefined) throw new Error('no container engine to run the benchmark on');
      const gpuDeviceIds = identity.gpus.map((gpu) => gpu.uuid).filter((uuid) => uuid !== '');
      const run = parts.benchmark.run({ image, gpuDeviceIds, signal: controller.signal });
      benchmarkRun = run;
      const result = await bounded(run);
      benchmark = result.figures;
      benchmarkOutput = result.output;
      if (parts.network !== undefined) {
        phase = 'reading the network figures';
        network = await bounded(parts.network());
      }
    }
  } catch (failure) {
    error = (controller.signal.aborted ? errorText(controller.signal.reason) : errorText(failure)).slice(0, ERROR_MAX_CHARS);
  } finally {
    clock.clearTimeout(timer);
    if (!controller.signal.aborted) controller.abort(new Error('the self-test ended'));
  }
  const measuredAt = clock.now();
  const durationMs = Math.max(0, Math.round(clock.monotonicMs() - startedMs));
  // A benchmark cut off by the deadline stops and removes its container when it sees the abort: wait for that (a
  // bounded while), so `ark-agent selftest` never exits leaving a benchmark running.
  if (benchmarkRun !== undefined) {
    await Promise.race([benchmarkRun.then(noop, noop), clock.sleep(request.cleanupGraceMs ?? CLEANUP_GRACE_MS)]);
  }

  const body: HardwareReceiptBody = {
    version: HARDWARE_RECEIPT_VERSION,
    machine_id: parts.machineId,
    receipt_seq: await parts.nextSeq(),
    trigger: request.trigger,
    ...(request.commandId === undefined ? {} : { command_id: request.commandId }),
    ...(request.jobId === undefined ? {} : { job_id: request.jobId }),
    started_at: startedAt.toISOString(),
    measured_at: measuredAt.toISOString(),
    duration_ms: durationMs,
    ok: error === undefined,
    ...(error === undefined ? {} : { error }),
    ...(identity.driver_version === undefined ? {} : { driver_version: identity.driver_version.slice(0, 64) }),
    ...(identity.cuda_version === undefined ? {} : { cuda_version: identity.cuda_version.slice(0, 64) }),
    gpus: identity.gpus.slice(0, 64),
    cpu: { model: machine.cpu.model.slice(0, 200), cores: Math.min(4096, Math.max(1, Math.floor(machine.cpu.cores))) },
    ram_bytes: Math.max(0, Math.floor(machine.ram_bytes)),
    ...(benchmark === undefined ? {} : { benchmark }),
    ...(network === undefined || Object.keys(network).length === 0 ? {} : { network }),
  };
  return { body, signed: signHardwareReceipt(body, parts.sign), ...(benchmarkOutput === undefined ? {} : { benchmarkOutput }) };
}
