import { randomBytes } from 'node:crypto';
import { PassThrough, type Readable } from 'node:stream';
import type { RelayAgentMessage, RelayOpenMessage } from '@ark/shared';

// The relay's tunnel over the agent channel: one request to a job's engine is a stream of unreliable frames on
// the machine's signed connection (relay_open/relay_cancel down, relay_head/relay_data/relay_end up). The agent
// dials the control plane, so this reaches engines behind NAT; nothing listens on the rig for the relay.

/** What the relay asks of the engine, without the frame's envelope. */
export type RelayRequest = Omit<RelayOpenMessage, 'v' | 't' | 'sid' | 'seq' | 'stream_id'>;

/** Sends one relay frame body to the machine's connection on this process; false when it holds none. */
export type RelaySend = (machineId: string, body: { t: 'relay_open' | 'relay_cancel' } & Record<string, unknown>) => boolean;

/** Why a stream failed before or while the engine answered. */
export class RelayStreamError extends Error {
  constructor(
    readonly reason: 'unreachable' | 'timeout' | 'not_running' | 'aborted' | 'disconnected',
    detail: string,
  ) {
    super(detail);
  }
}

/** The engine's answer as it begins: status, content type, and its body as it arrives. */
export interface RelayResponse {
  status: number;
  contentType: string;
  /** The engine's bytes exactly as sent; destroyed with a RelayStreamError when the answer is cut. */
  body: Readable;
}

interface OpenStream {
  machineId: string;
  head: { resolve(response: RelayResponse): void; reject(error: Error): void } | null;
  body: PassThrough;
}

/** Every relay stream of this process, by id; the gateway hands it the agents' relay frames. */
export class RelayTunnel {
  readonly #send: RelaySend;
  readonly #streams = new Map<string, OpenStream>();

  constructor(send: RelaySend) {
    this.#send = send;
  }

  /** Streams open now (tests and metrics). */
  get openCount(): number {
    return this.#streams.size;
  }

  /**
   * Opens a request to the engine on `machineId`. Resolves when the engine's answer begins; rejects when the
   * machine is not connected here, or the agent reports a failure before any answer. `cancel` ends it early.
   */
  open(machineId: string, request: RelayRequest): { response: Promise<RelayResponse>; cancel: () => void } {
    const streamId = randomBytes(12).toString('base64url');
    const body = new PassThrough();
    // A cut reaches whoever reads the body; one nobody reads any more (the client left) must not crash the process.
    body.on('error', () => {});
    const response = new Promise<RelayResponse>((resolve, reject) => {
      this.#streams.set(streamId, { machineId, head: { resolve, reject }, body });
    });
    if (!this.#send(machineId, { t: 'relay_open', stream_id: streamId, ...request })) {
      this.#fail(streamId, new RelayStreamError('disconnected', 'the machine is not connected to this control plane'));
    }
    return { response, cancel: () => this.cancel(streamId) };
  }

  /** The client went away or a limit passed: tell the agent to abort, and end the body here. */
  cancel(streamId: string): void {
    const stream = this.#streams.get(streamId);
    if (stream === undefined) return;
    this.#send(stream.machineId, { t: 'relay_cancel', stream_id: streamId });
    this.#fail(streamId, new RelayStreamError('aborted', 'the relay request was cancelled'), false);
  }

  /** A relay frame from `machineId`'s agent. Frames of unknown streams (cancelled, or another machine's) are dropped. */
  receive(machineId: string, msg: RelayAgentMessage): void {
    const stream = this.#streams.get(msg.stream_id);
    if (stream === undefined || stream.machineId !== machineId) return;
    switch (msg.t) {
      case 'relay_head': {
        const head = stream.head;
        stream.head = null;
        head?.resolve({ status: msg.status, contentType: msg.content_type, body: stream.body });
        return;
      }
      case 'relay_data': {
        if (stream.head !== null) this.#fail(msg.stream_id, new RelayStreamError('unreachable', 'data before the answer began'));
        else stream.body.write(Buffer.from(msg.data, 'base64'));
        return;
      }
      case 'relay_end': {
        if (msg.error !== undefined) {
          this.#fail(msg.stream_id, new RelayStreamError(msg.error, msg.detail ?? msg.error));
          return;
        }
        this.#streams.delete(msg.stream_id);
        if (stream.head !== null) stream.head.reject(new RelayStreamError('unreachable', 'the engine ended without an answer'));
        stream.body.end();
        return;
      }
    }
  }

  /** The machine's connection on this process ended: every stream to it fails. */
  machineGone(machineId: string): void {
    for (const [streamId, stream] of this.#streams) {
      if (stream.machineId === machineId) this.#fail(streamId, new RelayStreamError('disconnected', "the machine's connection ended"));
    }
  }

  /** Ends a stream: before the answer began its promise rejects; after, its body is destroyed (with the error when `cut`). */
  #fail(streamId: string, error: RelayStreamError, cut = true): void {
    const stream = this.#streams.get(streamId);
    if (stream === undefined) return;
    this.#streams.delete(streamId);
    if (stream.head !== null) {
      stream.head.reject(error);
      stream.body.destroy();
    } else {
      stream.body.destroy(cut ? error : undefined);
    }
  }
}
