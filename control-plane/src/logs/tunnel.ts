import { randomBytes } from 'node:crypto';
import type { JobLogLine, LogsAgentMessage, LogsOpenMessage } from '@ark/shared';

// Job logs over the agent channel (issue 25 item 2), modelled on the relay's tunnel (relay/tunnel.ts): one request
// for a job's lines is a stream of unreliable frames on the machine's signed connection (logs_open/logs_cancel
// down, logs_data/logs_end up). The agent keeps the lines and paces what it sends; nothing here is stored.

/** What the reader asks of the agent, without the frame's envelope. */
export type LogRequest = Omit<LogsOpenMessage, 'v' | 't' | 'sid' | 'seq' | 'stream_id'>;

/** Sends one log frame body to the machine's connection on this process; false when it holds none. */
export type LogSend = (machineId: string, body: { t: 'logs_open' | 'logs_cancel' } & Record<string, unknown>) => boolean;

/** Why a stream ended early: the agent's reasons, or the machine's connection here ended. */
export type LogStreamFailure = 'not_found' | 'unavailable' | 'aborted' | 'disconnected';

/** Where a stream's frames go. */
export interface LogReader {
  lines(lines: JobLogLine[]): void;
  /** The stream ended: every line asked for was sent (no failure), or it failed. */
  ended(failure?: { reason: LogStreamFailure; detail: string }): void;
}

interface OpenStream {
  machineId: string;
  reader: LogReader;
}

/** Every log stream of this process, by id; the gateway hands it the agents' log frames. */
export class LogTunnel {
  readonly #send: LogSend;
  readonly #streams = new Map<string, OpenStream>();

  constructor(send: LogSend) {
    this.#send = send;
  }

  /** Streams open now (tests and metrics). */
  get openCount(): number {
    return this.#streams.size;
  }

  /** Asks `machineId`'s agent for a job's lines; they reach `reader` as they come. `cancel` ends the stream early. */
  open(machineId: string, request: LogRequest, reader: LogReader): { cancel: () => void } {
    const streamId = randomBytes(12).toString('base64url');
    this.#streams.set(streamId, { machineId, reader });
    if (!this.#send(machineId, { t: 'logs_open', stream_id: streamId, ...request })) {
      this.#end(streamId, { reason: 'disconnected', detail: 'the machine is not connected to this control plane' });
    }
    return { cancel: () => this.cancel(streamId) };
  }

  /** The reader went away: tell the agent to stop, and forget the stream here. */
  cancel(streamId: string): void {
    const stream = this.#streams.get(streamId);
    if (stream === undefined) return;
    this.#streams.delete(streamId);
    this.#send(stream.machineId, { t: 'logs_cancel', stream_id: streamId });
  }

  /** A log frame from `machineId`'s agent. Frames of unknown streams (cancelled, or another machine's) are dropped. */
  receive(machineId: string, msg: LogsAgentMessage): void {
    const stream = this.#streams.get(msg.stream_id);
    if (stream === undefined || stream.machineId !== machineId) return;
    if (msg.t === 'logs_data') {
      stream.reader.lines(msg.lines);
      return;
    }
    this.#end(msg.stream_id, msg.error === undefined ? undefined : { reason: msg.error, detail: msg.detail ?? msg.error });
  }

  /** The machine's connection on this process ended: every stream to it fails. */
  machineGone(machineId: string): void {
    for (const [streamId, stream] of this.#streams) {
      if (stream.machineId === machineId) this.#end(streamId, { reason: 'disconnected', detail: "the machine's connection ended" });
    }
  }

  #end(streamId: string, failure?: { reason: LogStreamFailure; detail: string }): void {
    const stream = this.#streams.get(streamId);
    if (stream === undefined) return;
    this.#streams.delete(streamId);
    stream.reader.ended(failure);
  }
}
