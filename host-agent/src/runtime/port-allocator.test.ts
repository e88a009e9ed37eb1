import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { canBind, PortAllocator, PortRangeExhaustedError, parsePortRange } from './port-allocator.js';

async function findFreeRange(size: number): Promise<{ first: number; last: number }> {
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const first = 30_000 + Math.floor(Math.random() * 20_000);
    let free = true;
    for (let port = first; port < first + size && free; port += 1) free = await canBind(port, '127.0.0.1');
    if (free) return { first, last: first + size - 1 };
  }
  throw new Error('no free range');
}

describe('PortAllocator', () => {
  const servers: Server[] = [];
  afterEach(async () => {
    for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
  });

  it('hands out free ports of the range, skipping taken and bound ones', async () => {
    const range = await findFreeRange(5);
    const busy = createServer();
    servers.push(busy);
    await new Promise<void>((resolve) => busy.listen(range.first + 1, '127.0.0.1', resolve));
    const allocator = new PortAllocator({ range, probeHosts: ['127.0.0.1'] });
    const ports = await allocator.allocate(2, new Set([range.first]));
    expect(ports).toEqual([range.first + 2, range.first + 3]);
    // The next call starts after the last port handed out.
    expect(await allocator.allocate(1, new Set())).toEqual([range.first + 4]);
    await expect(allocator.allocate(5, new Set())).rejects.toBeInstanceOf(PortRangeExhaustedError);
  });

  it('parses a range option', () => {
    expect(parsePortRange('40000-40999')).toEqual({ first: 40000, last: 40999 });
    expect(() => parsePortRange('40999-40000')).toThrow();
    expect(() => parsePortRange('0-10')).toThrow();
    expect(() => parsePortRange('1-70000')).toThrow();
  });
});
