// Docker multiplexes stdout and stderr of a non-tty attachment into one stream of frames:
// an 8-byte header (stream type, 3 zero bytes, big-endian length) and the payload.
import { PassThrough, type Readable } from 'node:stream';

const HEADER_BYTES = 8;

/** Splits a multiplexed attach stream into stdout and stderr; both end when the source ends. */
export function demultiplex(source: Readable): { stdout: PassThrough; stderr: PassThrough } {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let pending: Buffer = Buffer.alloc(0);
  source.on('data', (chunk: Buffer) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    while (pending.length >= HEADER_BYTES) {
      const length = pending.readUInt32BE(4);
      if (pending.length < HEADER_BYTES + length) break;
      const payload = pending.subarray(HEADER_BYTES, HEADER_BYTES + length);
      const target = pending[0] === 2 ? stderr : stdout;
      // Backpressure: pause the socket until the slow side drains.
      if (!target.write(payload)) {
        source.pause();
        target.once('drain', () => source.resume());
      }
      pending = pending.subarray(HEADER_BYTES + length);
    }
  });
  const finish = () => {
    stdout.end();
    stderr.end();
  };
  source.once('end', finish);
  source.once('close', finish);
  source.once('error', finish);
  return { stdout, stderr };
}

/** Decodes a whole multiplexed buffer (container logs) into text, stdout and stderr interleaved. */
export function demultiplexBuffer(buffer: Buffer): Buffer {
  const parts: Buffer[] = [];
  let offset = 0;
  while (offset + HEADER_BYTES <= buffer.length) {
    const type = buffer[offset];
    const length = buffer.readUInt32BE(offset + 4);
    // Not a frame header: the container had a tty and its log is raw.
    if ((type !== 0 && type !== 1 && type !== 2) || buffer[offset + 1] !== 0 || buffer[offset + 2] !== 0 || buffer[offset + 3] !== 0) {
      return offset === 0 ? buffer : Buffer.concat(parts);
    }
    parts.push(buffer.subarray(offset + HEADER_BYTES, Math.min(buffer.length, offset + HEADER_BYTES + length)));
    offset += HEADER_BYTES + length;
  }
  return Buffer.concat(parts);
}

/**
 * Calls `onFrame` with each whole frame of a multiplexed stream, keeping frame boundaries (a container's log entry
 * is one frame). Resolves when the source ends; rejects on its error.
 */
export function forEachFrame(source: Readable, onFrame: (stream: 'stdout' | 'stderr', payload: Buffer) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    let pending: Buffer = Buffer.alloc(0);
    source.on('data', (chunk: Buffer) => {
      pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
      while (pending.length >= HEADER_BYTES) {
        const length = pending.readUInt32BE(4);
        if (pending.length < HEADER_BYTES + length) break;
        onFrame(pending[0] === 2 ? 'stderr' : 'stdout', pending.subarray(HEADER_BYTES, HEADER_BYTES + length));
        pending = pending.subarray(HEADER_BYTES + length);
      }
    });
    source.once('end', () => resolve());
    source.once('close', () => resolve());
    source.once('error', reject);
  });
}
