// An ExecSession over the hijacked stream of a started Docker exec: output split by stream (or passed through as is
// under a TTY), input half-closed at its end, and the exit code read once the output has closed. The Docker calls
// themselves (inspect, resize) come from DockerRuntime, bounded like every other call.
import { type Duplex, PassThrough, type Readable, Writable } from 'node:stream';
import type { ExecSession } from './container-runtime.js';
import { demultiplex } from './docker-stream.js';

/** Exit-code reads after the output closed, 50 ms apart, before the exit code is given up as unknown. */
const EXEC_EXIT_READS_MAX = 20;

export type ExecControl = {
  /** One exec inspect: `Running` is false once the process has exited. */
  inspect(): Promise<{ Running: boolean; ExitCode: number | null }>;
  /** Resizes the exec's TTY. */
  resize(rows: number, cols: number): Promise<unknown>;
};

export function execSession(stream: Duplex, tty: boolean, control: ExecControl): ExecSession {
  let stdout: Readable;
  let stderr: Readable;
  if (tty) {
    const passthrough = new PassThrough();
    stream.pipe(passthrough);
    stdout = passthrough;
    const empty = new PassThrough();
    empty.end();
    stderr = empty;
  } else {
    ({ stdout, stderr } = demultiplex(stream));
  }
  const stdin = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      if (stream.destroyed || stream.writableEnded) {
        callback();
        return;
      }
      stream.write(chunk, (error) => callback(error ?? null));
    },
    final(callback) {
      // Half-close: the process sees end of input, its output keeps flowing.
      if (!stream.destroyed && !stream.writableEnded) stream.end();
      callback();
    },
  });
  stdin.on('error', () => undefined);
  const streamDone = new Promise<void>((resolve) => {
    stream.once('end', resolve);
    stream.once('close', resolve);
    stream.once('error', () => resolve());
  });
  const exited = streamDone.then(async () => {
    // Docker may still mark the exec running for a moment after its output closed.
    for (let attempt = 0; attempt < EXEC_EXIT_READS_MAX; attempt += 1) {
      try {
        const info = await control.inspect();
        if (!info.Running) return info.ExitCode ?? undefined;
      } catch {
        return undefined;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return undefined;
  });
  return {
    stdin,
    stdout,
    stderr,
    exited,
    resize: async (rows, cols) => {
      if (!tty) return;
      await control.resize(rows, cols).catch(() => undefined);
    },
    close: () => stream.destroy(),
  };
}
