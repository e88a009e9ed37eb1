import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { demultiplex, demultiplexBuffer } from './docker-stream.js';

function frame(stream: 1 | 2, text: string): Buffer {
  const payload = Buffer.from(text);
  const header = Buffer.alloc(8);
  header[0] = stream;
  header.writeUInt32BE(payload.length, 4);
  return Buffer.concat([header, payload]);
}

async function text(stream: NodeJS.ReadableStream): Promise<string> {
  let out = '';
  for await (const chunk of stream) out += chunk.toString();
  return out;
}

describe('Docker stream framing', () => {
  it('splits stdout and stderr frames, even when chunks cut through headers', async () => {
    const source = new PassThrough();
    const { stdout, stderr } = demultiplex(source);
    const bytes = Buffer.concat([frame(1, 'hello '), frame(2, 'oops'), frame(1, 'world')]);
    for (let offset = 0; offset < bytes.length; offset += 3) source.write(bytes.subarray(offset, offset + 3));
    source.end();
    expect(await Promise.all([text(stdout), text(stderr)])).toEqual(['hello world', 'oops']);
  });

  it('decodes multiplexed logs and passes raw tty logs through', () => {
    expect(demultiplexBuffer(Buffer.concat([frame(1, 'a\n'), frame(2, 'b\n')])).toString()).toBe('a\nb\n');
    expect(demultiplexBuffer(Buffer.from('plain tty output\n')).toString()).toBe('plain tty output\n');
  });
});
