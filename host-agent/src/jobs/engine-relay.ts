import {
  type LaunchJobBody,
  RELAY_CHUNK_MAX_BYTES,
  type RelayCancelMessage,
  type RelayDataMessage,
  type RelayEndMessage,
  type RelayHeadMessage,
  type RelayOpenMessage,
} from '@ark/shared';

// The agent's end of the relay tunnel (control-plane/src/relay/tunnel.ts): a relay_open from the control plane
// becomes one HTTP request to the job's engine on this machine, with the job's engine key added here; the answer
// goes back as relay_head, relay_data (each piece as the engine wrote it, in order) and relay_end. Nothing listens
// on the rig for the relay: the agent already holds an outbound connection, so a rig behind NAT is reached too.

/** Where a running model job's engine answers on this machine, and the key it was started with. */
export interface EngineTarget {
  host: string;
  port: number;
  apiKey: string;
}

type Body<M> = Omit<M, 'v' | 'sid' | 'seq'>;
export type RelayReply = Body<RelayHeadMessage> | Body<RelayDataMessage> | Body<RelayEndMessage>;

export interface EngineRelayOptions {
  /** The engine of a job that is running here under `fence`; undefined otherwise. */
  target(jobId: string, fence: string): EngineTarget | undefined;
  /** Sends one frame on the current connection; false when there is none (the stream is then abandoned). */
  send(body: RelayReply): boolean;
  logger: { warn(detail: Record<string, unknown>, message: string): void };
  fetch?: typeof globalThis.fetch;
  /** Streams open at once on this machine; more are refused as unreachable. */
  maxStreams?: number;
}

/** The engine's port for a launch: its health port, else its first http(s) port (the readiness check asks the same one). */
export function engineContainerPort(launch: Pick<LaunchJobBody, 'health_check' | 'ports'>): number | undefined {
  return launch.health_check?.port ?? launch.ports.find((port) => port.protocol !== 'tcp')?.container_port;
}

export class EngineRelay {
  readonly #options: EngineRelayOptions;
  readonly #fetch: typeof globalThis.fetch;
  readonly #open = new Map<string, AbortController>();

  constructor(options: EngineRelayOptions) {
    this.#options = options;
    this.#fetch = options.fetch ?? globalThis.fetch;
  }

  handle(msg: RelayOpenMessage | RelayCancelMessage): void {
    if (msg.t === 'relay_cancel') {
      this.#open.get(msg.stream_id)?.abort();
      return;
    }
    void this.#run(msg);
  }

  /** The connection ended: its streams can no longer be answered. */
  abortAll(): void {
    for (const controller of this.#open.values()) controller.abort();
  }

  async #run(open: RelayOpenMessage): Promise<void> {
    const streamId = open.stream_id;
    const end = (error?: RelayEndMessage['error'], detail?: string) =>
      this.#options.send({
        t: 'relay_end',
        stream_id: streamId,
        ...(error === undefined ? {} : { error }),
        ...(detail === undefined ? {} : { detail: detail.slice(0, 500) }),
      });
    const target = this.#options.target(open.job_id, open.fence);
    if (target === undefined) return void end('not_running', 'the job is not running here under this fence');
    if (this.#open.has(streamId)) return;
    if (this.#open.size >= (this.#options.maxStreams ?? 256)) return void end('unreachable', 'too many relay streams on this machine');
    const controller = new AbortController();
    this.#open.set(streamId, controller);
    const firstByte = setTimeout(() => controller.abort('first_byte'), open.first_byte_timeout_ms);
    const total = setTimeout(() => controller.abort('total'), open.total_timeout_ms);
    let began = false;
    try {
      const host = target.host.includes(':') ? `[${target.host}]` : target.host;
      const response = await this.#fetch(`http://${host}:${target.port}${open.path}`, {
        method: open.method,
        headers: {
          authorization: `Bearer ${target.apiKey}`,
          accept: 'application/json, text/event-stream',
          ...(open.body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(open.body === undefined ? {} : { body: Buffer.from(open.body, 'base64') }),
        signal: controller.signal,
      });
      clearTimeout(firstByte);
      began = true;
      if (
        !this.#options.send({
          t: 'relay_head',
          stream_id: streamId,
          status: response.status,
          content_type: (response.headers.get('content-type') ?? '').slice(0, 256),
        })
      )
        return void controller.abort();
      if (response.body !== null) {
        // Pieces that arrive in the same turn of the event loop go out as one frame at the end of that turn: nothing
        // ever waits for more data, and an engine faster than one signed frame per piece is not slowed to that rate.
        const pending: Buffer[] = [];
        let flushing: Promise<boolean> | null = null;
        const flush = (): boolean => {
          const all = Buffer.concat(pending.splice(0));
          for (let at = 0; at < all.byteLength; at += RELAY_CHUNK_MAX_BYTES) {
            const piece = all.subarray(at, Math.min(at + RELAY_CHUNK_MAX_BYTES, all.byteLength));
            if (!this.#options.send({ t: 'relay_data', stream_id: streamId, data: piece.toString('base64') })) return false;
          }
          return true;
        };
        for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
          pending.push(Buffer.from(chunk));
          flushing ??= new Promise<boolean>((resolve) =>
            setImmediate(() => {
              flushing = null;
              resolve(flush());
            }),
          ).then((sent) => {
            if (!sent) controller.abort();
            return sent;
          });
        }
        if (flushing !== null && !(await flushing)) return;
        if (pending.length > 0 && !flush()) return void controller.abort();
      }
      end();
    } catch (error) {
      const reason = controller.signal.reason;
      if (reason === 'first_byte' || reason === 'total')
        end('timeout', reason === 'first_byte' ? 'no answer in time' : 'the answer took too long');
      else if (controller.signal.aborted) end('aborted', 'cancelled');
      else {
        end('unreachable', began ? 'the engine cut its answer' : String((error as Error)?.message ?? error));
        if (!began) this.#options.logger.warn({ job_id: open.job_id, err: String(error) }, 'relay: the engine did not answer');
      }
    } finally {
      clearTimeout(firstByte);
      clearTimeout(total);
      this.#open.delete(streamId);
    }
  }
}
