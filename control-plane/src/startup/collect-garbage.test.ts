import type { IncomingMessage } from 'node:http';
import { setFlagsFromString } from 'node:v8';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../clock.js';
import { collectStartupGarbage } from './collect-garbage.js';
import { createTestApp, seedAccount, type TestApp } from '../testing/app.js';
import { openSocket, readUntilClosed } from '../testing/raw-http.js';

// The request path's objects share hidden classes once the startup garbage is collected (startup/collect-garbage.ts). Checked
// on what V8 itself says about the headers objects of real requests over a socket, before and after the collection.

setFlagsFromString('--allow-natives-syntax');
const haveSameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean;

describe('the collection after startup', () => {
  let t: TestApp<ManualClock>;
  let port: number;
  let apiKey: string;
  let probes = 0;
  const requests: IncomingMessage[] = [];

  beforeAll(async () => {
    t = await createTestApp('sqlite');
    apiKey = (await seedAccount(t.ctx)).apiKey;
    // Every request Node hands to the app, as Node built it.
    t.app.server.prependListener('request', (request: IncomingMessage) => requests.push(request));
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    port = (t.app.server.address() as { port: number }).port;
  });
  afterAll(() => t.destroy());

  /**
   * Two account reads; whether their headers objects (built by Node at the first read of `headers`) share a hidden
   * class. Clients send headers in their own order; these lead with a name this process has not seen, as the first
   * header of a client it had not met before would be: its transition from the `{}` map is made by these requests.
   */
  async function twoReadsShareAMap(): Promise<boolean> {
    requests.length = 0;
    const probe = `x-probe-${++probes}`;
    for (let i = 0; i < 2; i++) {
      const socket = await openSocket(port);
      socket.write(
        `GET /api/v1/account HTTP/1.1\r\n${probe}: 1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${apiKey}\r\nConnection: close\r\n\r\n`,
      );
      expect((await readUntilClosed(socket, 10_000)).status).toBe(200);
    }
    expect(requests).toHaveLength(2);
    const [first, second] = requests.map((request) => request.headers) as [object, object];
    return haveSameMap(first, second);
  }

  it('gives two requests one hidden class for their headers, where the compiled schemas had left each its own', async () => {
    // Building the app compiled every route's schemas: the table of the `{}` map's transitions is full, and each
    // request's headers get a map no other object has.
    expect(await twoReadsShareAMap()).toBe(false);
    expect(collectStartupGarbage()).toBe(true);
    expect(await twoReadsShareAMap()).toBe(true);
    // And it stays so.
    expect(await twoReadsShareAMap()).toBe(true);
  });
});
