import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { demultiplex, demultiplexBuffer } from './docker-stream.js';
import { dockerFrame, streamText } from './testing/docker-frames.js';

describe('Docker stream framing', () => {
  it('splits stdout and stderr frames, even when chunks cut through headers', async () => {
    const source = new PassThrough();
    const { stdout, stderr } = demultiplex(source);
    const bytes = Buffer.concat([dockerFrame(1, 'hello '), dockerFrame(2, 'oops'), dockerFrame(1, 'world')]);
    for (let offset = 0; offset < bytes.length; offset += 3) source.write(bytes.subarray(offset, offset + 3));
    source.end();
    expect(await Promise.all([streamText(stdout), streamText(stderr)])).toEqual(['hello world', 'oops']);
  });

  it('decodes multiplexed logs and passes raw tty logs through', () => {
    expect(demultiplexBuffer(Buffer.concat([dockerFrame(1, 'a\n'), dockerFrame(2, 'b\n')])).toString()).toBe('a\nb\n');
    expect(demultiplexBuffer(Buffer.from('plain tty output\n')).toString()).toBe('plain tty output\n');
  });
});
