import { describe, expect, it } from 'vitest';
import { serverSentEvents } from './sse.js';

async function* chunks(...parts: string[]): AsyncGenerator<Uint8Array> {
  for (const part of parts) yield new TextEncoder().encode(part);
}

describe('serverSentEvents', () => {
  it('parses events split anywhere across chunks, skipping comments', async () => {
    const events = [];
    for await (const event of serverSentEvents(
      chunks('id: 1\nevent: li', 'ne\ndata: {"a":1}\n\n: keep-alive\n\n', 'event: end\r\ndata: {}\r\n\r\n'),
    )) {
      events.push(event);
    }
    expect(events).toEqual([
      { id: '1', event: 'line', data: '{"a":1}' },
      { id: '1', event: 'end', data: '{}' },
    ]);
  });
});
