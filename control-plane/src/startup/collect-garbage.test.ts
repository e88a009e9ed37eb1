import type { IncomingMessage } from 'node:http';
import { constants, PerformanceObserver } from 'node:perf_hooks';
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

// Full collections V8 runs on its own. One that runs between the app's build and the first check (allocation during
// the seeding and listening, on a slow or busy machine) has already done what the startup collection does, and the
// state before it can no longer be seen: that check is then skipped, the ones after it still hold.
let majorCollectionsSeen = 0;
const majorCollections = new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    if ((entry as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majorCollectionsSeen += 1;
  }
});
majorCollections.observe({ entryTypes: ['gc'] });
/** Whether V8 ran a full collection since the count was last reset (entries arrive a moment after the collection). */
async function sawMajorCollection(): Promise<boolean> {
  for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
  return majorCollectionsSeen > 0;
}

describe('the collection after startup', () => {
  let t: TestApp<ManualClock>;
  let port: number;
  let apiKey: string;
  let probes = 0;
  const requests: IncomingMessage[] = [];

  beforeAll(async () => {
    t = await createTestApp('sqlite');
    // The app is built (ready: every schema compiled): only collections from here on count.
    majorCollectionsSeen = 0;
    apiKey = (await seedAccount(t.ctx)).apiKey;
    // Every request Node hands to the app, as Node built it.
    t.app.server.prependListener('request', (request: IncomingMessage) => requests.push(request));
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    port = (t.app.server.address() as { port: number }).port;
  });
  afterAll(async () => {
    // The forks keep their modules between files: the observer must not outlive this one, whatever failed.
    majorCollections.disconnect();
    await t.destroy();
  });

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
    // request's headers get a map no other object has (unless V8 already ran a full collection of its own).
    const before = await twoReadsShareAMap();
    if (!(await sawMajorCollection())) expect(before).toBe(false);
    expect(collectStartupGarbage()).toBe(true);
    expect(await twoReadsShareAMap()).toBe(true);
    // And it stays so.
    expect(await twoReadsShareAMap()).toBe(true);
  });
});
