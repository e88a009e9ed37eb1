import type { RELAY_ENGINE_PATHS } from '@ark/shared';
import type { Clock, ClockTimer } from '../clock.js';
import type { RelayConfig } from '../config/relay.js';
import type { JobRecord } from '../domain/jobs/job.js';
import { DomainError } from '../errors.js';
import { type RelayResponse, RelayStreamError, type RelayTunnel } from './tunnel.js';

// The OpenAI-compatible relay's use case: which jobs answer, the per-job stream limit, the timeouts, and the
// tunnel's failures as the API's error codes. The caller (http/routes/relay.ts) has authorized the caller.

export type RelayPath = (typeof RELAY_ENGINE_PATHS)[number];

export interface RelayCall {
  job: JobRecord;
  method: 'GET' | 'POST';
  path: RelayPath;
  body: Buffer | null;
}

/** An engine answer in progress; `release` must be called once it ended (or the client left) to free its slot. */
export interface RelayAnswer extends RelayResponse {
  /** Ends the stream early (client gone): the agent aborts the engine request. */
  cancel(): void;
}

export class JobRelay {
  readonly #tunnel: RelayTunnel;
  readonly #config: RelayConfig;
  /** The stream's total and first-byte timeouts run on it. */
  readonly #clock: Clock;
  readonly #open = new Map<string, number>();

  constructor(tunnel: RelayTunnel, config: RelayConfig, clock: Clock) {
    this.#tunnel = tunnel;
    this.#config = config;
    this.#clock = clock;
  }

  /** Only RUNNING jobs on model-kind templates answer (403 RELAY_NOT_MODEL_JOB, 409 RELAY_JOB_NOT_RUNNING). */
  static assertRelayable(job: JobRecord): void {
    if (job.template?.kind !== 'model') throw new DomainError('RELAY_NOT_MODEL_JOB');
    if (job.state !== 'RUNNING')
      throw new DomainError('RELAY_JOB_NOT_RUNNING', `The relay answers only while the job is RUNNING; it is ${job.state}.`);
  }

  /**
   * Opens the engine request through the job's machine and resolves when its answer begins. Holds one of the
   * job's stream slots until the answer ends, fails or is cancelled; the whole answer is bounded by maxStreamMs.
   */
  async call(call: RelayCall): Promise<RelayAnswer> {
    JobRelay.assertRelayable(call.job);
    const jobId = call.job.id;
    const clock = this.#clock;
    const open = this.#open.get(jobId) ?? 0;
    if (open >= this.#config.maxStreamsPerJob) {
      throw new DomainError('UNAVAILABLE', `At most ${this.#config.maxStreamsPerJob} relay requests may be open on one job at once.`);
    }
    this.#open.set(jobId, open + 1);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      clock.clearTimeout(total);
      const left = (this.#open.get(jobId) ?? 1) - 1;
      if (left <= 0) this.#open.delete(jobId);
      else this.#open.set(jobId, left);
    };
    const { response, cancel } = this.#tunnel.open(call.job.machineId, {
      job_id: jobId,
      fence: call.job.fence.toString(),
      method: call.method,
      path: call.path,
      ...(call.body === null ? {} : { body: call.body.toString('base64') }),
      first_byte_timeout_ms: this.#config.firstByteTimeoutMs,
      total_timeout_ms: this.#config.maxStreamMs,
    });
    const total = clock.setTimeout(cancel, this.#config.maxStreamMs);
    total.unref();
    // The agent times the first byte; this one covers an agent that never answers at all.
    let firstByte: ClockTimer | undefined;
    const late = new Promise<never>((_, reject) => {
      firstByte = clock.setTimeout(
        () => reject(new RelayStreamError('timeout', 'no answer from the machine')),
        this.#config.firstByteTimeoutMs + 5_000,
      );
      firstByte.unref();
    });
    try {
      const answer = await Promise.race([response, late]);
      answer.body.once('close', release);
      return { ...answer, cancel };
    } catch (error) {
      cancel();
      release();
      throw relayError(error);
    } finally {
      clock.clearTimeout(firstByte);
    }
  }
}

/** A tunnel failure before the answer began, as the API's error. */
function relayError(error: unknown): unknown {
  if (!(error instanceof RelayStreamError)) return error;
  switch (error.reason) {
    case 'timeout':
      return new DomainError('RELAY_ENGINE_TIMEOUT', `The job's engine did not answer in time: ${error.message}.`);
    case 'not_running':
      return new DomainError('RELAY_JOB_NOT_RUNNING', `The machine does not run the job's engine: ${error.message}.`);
    default:
      return new DomainError('RELAY_ENGINE_UNREACHABLE', `The job's engine could not be reached: ${error.message}.`);
  }
}
