import type { Clock, ClockTimer } from '../clock.js';
import { RelayStreamError, type RelayTunnel } from '../relay/tunnel.js';
import { type EngineModelsProbe, ReadinessProbeError } from '../services/jobs/readiness-probes.js';

// The readiness verifier's engine side (issue 24 item 1): a model job's engine lists its models through the relay, the
// same path renters' requests take (GET /v1/models over the agent's channel, the job key added on the machine). Built
// once in runtime.ts; the gateway's tunnel is attached when the app builds it (app.ts), since only the replica holding
// the machine's channel can relay to it. The wait runs on the injected clock.

/** The most of the engine's answer read: a model list is small. */
const MAX_ANSWER_BYTES = 256 * 1024;

export interface RelayReach {
  tunnel: Pick<RelayTunnel, 'open'>;
  connectedHere(machineId: string): boolean;
}

export class RelayEngineModelsProbe implements EngineModelsProbe {
  readonly #clock: Clock;
  readonly #timeoutMs: number;
  #reach: RelayReach | null = null;

  constructor(clock: Clock, timeoutMs: number) {
    this.#clock = clock;
    this.#timeoutMs = timeoutMs;
  }

  /** The app's gateway: its relay tunnel and which machines it holds. */
  attach(reach: RelayReach): void {
    this.#reach = reach;
  }

  /** Without a gateway (a one-shot `ark-cp` command) no machine is reached: nothing is verified from here. */
  reaches(machineId: string): boolean {
    return this.#reach?.connectedHere(machineId) ?? false;
  }

  async modelsOf(job: { id: string; machineId: string; fence: bigint }): Promise<string[]> {
    const reach = this.#reach;
    if (reach === null) throw new ReadinessProbeError('this control plane holds no agent channels');
    const clock = this.#clock;
    const { response, cancel } = reach.tunnel.open(job.machineId, {
      job_id: job.id,
      fence: job.fence.toString(),
      method: 'GET',
      path: '/v1/models',
      first_byte_timeout_ms: this.#timeoutMs,
      total_timeout_ms: this.#timeoutMs,
    });
    let timer: ClockTimer | null = null;
    const late = new Promise<never>((_, reject) => {
      timer = clock.setTimeout(() => {
        cancel();
        reject(new ReadinessProbeError(`the engine did not list its models through the relay within ${this.#timeoutMs} ms`));
      }, this.#timeoutMs);
      timer.unref();
    });
    try {
      return await Promise.race([readModels(response), late]);
    } catch (error) {
      cancel();
      if (error instanceof ReadinessProbeError) throw error;
      const detail = error instanceof RelayStreamError ? `${error.reason}: ${error.message}` : (error as Error).message;
      throw new ReadinessProbeError(`the engine's model list could not be read through the relay (${detail})`);
    } finally {
      clock.clearTimeout(timer);
    }
  }
}

/** The engine's answer, bounded, as the OpenAI shape `{data: [{id}]}`: its model ids. */
async function readModels(response: ReturnType<RelayTunnel['open']>['response']): Promise<string[]> {
  const answer = await response;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of answer.body) {
    size += (chunk as Buffer).length;
    if (size > MAX_ANSWER_BYTES) throw new ReadinessProbeError(`the engine's model list is larger than ${MAX_ANSWER_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  if (answer.status !== 200) throw new ReadinessProbeError(`the engine answered its model list with status ${answer.status}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new ReadinessProbeError("the engine's model list is not JSON");
  }
  const data = (parsed as { data?: unknown }).data;
  if (!Array.isArray(data)) throw new ReadinessProbeError("the engine's model list has no data array");
  return data.flatMap((item) => (typeof item === 'object' && item !== null && typeof item.id === 'string' ? [item.id as string] : []));
}
