import { Duplex } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { execSession } from './docker-exec-session.js';
import { dockerFrame, streamText } from './testing/docker-frames.js';

/** The hijacked exec socket: what the session writes is kept, what the test pushes is the process's output. */
function socket(): { stream: Duplex; written: Buffer[]; ended: () => boolean } {
  const written: Buffer[] = [];
  let ended = false;
  const stream = new Duplex({
    read() {},
    write(chunk: Buffer, _encoding, callback) {
      written.push(chunk);
      callback();
    },
    final(callback) {
      ended = true;
      callback();
    },
  });
  return { stream, written, ended: () => ended };
}

describe('an exec session over the hijacked stream', () => {
  it('splits stdout from stderr, half-closes stdin, and reads the exit code once the exec stops running', async () => {
    const { stream, written, ended } = socket();
    const readings = [
      { Running: true, ExitCode: null },
      { Running: false, ExitCode: 3 },
    ];
    const resized: number[][] = [];
    const session = execSession(stream, false, {
      inspect: async () => readings.shift() ?? { Running: false, ExitCode: 3 },
      resize: async (rows, cols) => resized.push([rows, cols]),
    });
    session.stdin.end('input\n');
    await new Promise((resolve) => session.stdin.once('finish', resolve));
    expect(Buffer.concat(written).toString()).toBe('input\n');
    expect(ended()).toBe(true);
    // Without a TTY there is nothing to resize.
    await session.resize(24, 80);
    expect(resized).toEqual([]);
    stream.push(Buffer.concat([dockerFrame(1, 'out'), dockerFrame(2, 'err')]));
    stream.push(null);
    expect(await Promise.all([streamText(session.stdout), streamText(session.stderr)])).toEqual(['out', 'err']);
    expect(await session.exited).toBe(3);
  });

  it('under a TTY passes output through as is, resizes, and gives an unknown exit code when inspect fails', async () => {
    const { stream } = socket();
    const resized: number[][] = [];
    const session = execSession(stream, true, {
      inspect: async () => {
        throw new Error('engine gone');
      },
      resize: async (rows, cols) => resized.push([rows, cols]),
    });
    await session.resize(40, 120);
    expect(resized).toEqual([[40, 120]]);
    stream.push('raw \u001b[1mbold\u001b[0m');
    stream.push(null);
    expect(await Promise.all([streamText(session.stdout), streamText(session.stderr)])).toEqual(['raw \u001b[1mbold\u001b[0m', '']);
    expect(await session.exited).toBeUndefined();
  });
});
