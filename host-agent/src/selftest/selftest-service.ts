// The daemon's side of the self-test: a run_selftest command runs the whole self-test in the background, one at a
// time (a benchmark owns the machine while it runs), and answers with a hardware_receipt naming the command; each job
// start runs identity only (trigger job_start) before the job may become ready, and a GPU the launch was assigned
// that nvidia-smi does not list fails the start. Every receipt goes to the channel's reliable queue, which persists
// it and resends it until the control plane acknowledges it.
import type { RunSelftestBody } from '@ark/shared';
import { missingAssignedGpus } from '../collectors/gpu-identity.js';
import { errorText } from '../jobs/text.js';
import { runSelftest, type SelftestOutcome, type SelftestParts, type SelftestRequest } from './selftest.js';

export type HardwareReceiptBody = { t: 'hardware_receipt'; receipt: string; signature: string };

/** What the agent and the job runtime need of the self-test. */
export interface AgentSelftest {
  /** Accepts a run_selftest command and returns at once; its receipt follows when it has run. */
  submit(commandId: string, body: RunSelftestBody): void;
  /** Identity only, before a job's readiness: the problem that must fail the start, or undefined. */
  checkJobStart(jobId: string, gpuPciAddresses: readonly string[]): Promise<string | undefined>;
  /** Resolves when every accepted self-test has run and queued its receipt. */
  idle(): Promise<void>;
  lastReceipt(): SelftestOutcome['body'] | undefined;
}

export type SelftestServiceOptions = {
  parts: SelftestParts;
  enqueue: (body: HardwareReceiptBody) => unknown;
  logger: { info(detail: Record<string, unknown>, message: string): void; warn(detail: Record<string, unknown>, message: string): void };
  /** Bound on the job-start identity check (default 30 s: nvidia-smi's own bound, and some). */
  jobStartTimeoutMs?: number;
  /** Called after each receipt is queued (the agent refreshes its status report). */
  onReceipt?: () => void;
};

/** Self-tests waiting beyond the one running; more than this are answered at once with a failed receipt. */
export const SELFTEST_PENDING_MAX = 2;

export class SelftestService implements AgentSelftest {
  readonly #options: SelftestServiceOptions;
  #tail: Promise<void> = Promise.resolve();
  #pending = 0;
  #last: SelftestOutcome['body'] | undefined;

  constructor(options: SelftestServiceOptions) {
    this.#options = options;
  }

  submit(commandId: string, body: RunSelftestBody): void {
    const request: SelftestRequest = {
      trigger: body.trigger,
      timeoutMs: body.timeout_ms,
      commandId,
      // The control plane asks for identity only when it has no benchmark image (ARK_SELFTEST_IMAGE unset): without
      // one here either, the receipt says what the machine is, unmeasured, and is not a failed self-test.
      benchmark: body.benchmark_image !== undefined || this.#options.parts.benchmarkImage !== undefined,
      ...(body.benchmark_image === undefined ? {} : { benchmarkImage: body.benchmark_image }),
    };
    if (this.#pending >= SELFTEST_PENDING_MAX + 1) {
      // Still one signed receipt per command: the control plane learns it was not run, and why.
      void this.#run({ ...request, benchmark: false, checkIdentity: () => 'too many self-tests waiting on this machine' });
      return;
    }
    this.#pending += 1;
    this.#tail = this.#tail
      .then(async () => {
        await this.#run(request);
      })
      .finally(() => {
        this.#pending -= 1;
      });
  }

  async checkJobStart(jobId: string, gpuPciAddresses: readonly string[]): Promise<string | undefined> {
    const outcome = await this.#run({
      trigger: 'job_start',
      jobId,
      benchmark: false,
      timeoutMs: this.#options.jobStartTimeoutMs ?? 30_000,
      checkIdentity: (identity) => missingAssignedGpus(identity, gpuPciAddresses),
    });
    if (outcome === undefined) return 'the GPU identity check could not run';
    return outcome.body.ok ? undefined : (outcome.body.error ?? 'the GPU identity check failed');
  }

  idle(): Promise<void> {
    return this.#tail;
  }

  lastReceipt(): SelftestOutcome['body'] | undefined {
    return this.#last;
  }

  async #run(request: SelftestRequest): Promise<SelftestOutcome | undefined> {
    const { logger } = this.#options;
    let outcome: SelftestOutcome;
    try {
      outcome = await runSelftest(this.#options.parts, request);
    } catch (error) {
      // Only taking a receipt number or signing can throw here (a broken state directory): nothing to report with.
      logger.warn({ trigger: request.trigger, error: errorText(error) }, 'self-test receipt could not be made');
      return undefined;
    }
    this.#last = outcome.body;
    const { body } = outcome;
    try {
      await this.#options.enqueue({ t: 'hardware_receipt', ...outcome.signed });
      logger.info(
        {
          trigger: body.trigger,
          receipt_seq: body.receipt_seq,
          ok: body.ok,
          ...(body.error === undefined ? {} : { error: body.error }),
          duration_ms: body.duration_ms,
          gpus: body.gpus.length,
          ...(body.benchmark === undefined
            ? {}
            : { matmul_gflops: body.benchmark.matmul_gflops, memory_bandwidth_gbps: body.benchmark.memory_bandwidth_gbps }),
          ...(body.command_id === undefined ? {} : { command_id: body.command_id }),
          ...(body.job_id === undefined ? {} : { job_id: body.job_id }),
        },
        'self-test receipt queued',
      );
    } catch (error) {
      logger.warn({ trigger: body.trigger, receipt_seq: body.receipt_seq, error: errorText(error) }, 'self-test receipt not queued');
    }
    this.#options.onReceipt?.();
    return outcome;
  }
}
