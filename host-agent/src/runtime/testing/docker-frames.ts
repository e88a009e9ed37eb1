// Test helpers for Docker's multiplexed attach and log streams: build a frame the way the engine writes one, and
// read a stream to its end as text.

/** One multiplexed Docker frame: stream 1 stdout, 2 stderr, an 8-byte header and the payload. */
export function dockerFrame(stream: 1 | 2, text: string): Buffer {
  const payload = Buffer.from(text);
  const header = Buffer.alloc(8);
  header[0] = stream;
  header.writeUInt32BE(payload.length, 4);
  return Buffer.concat([header, payload]);
}

/** Everything a stream gives until it ends, as text. */
export async function streamText(stream: NodeJS.ReadableStream): Promise<string> {
  let out = '';
  for await (const chunk of stream) out += chunk.toString();
  return out;
}
