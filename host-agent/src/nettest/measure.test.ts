import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { measureNetwork } from './measure.js';

type Behaviour = { slowDownload?: boolean; slowUpload?: boolean; failPing?: boolean; downloadStatus?: number };

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** A loopback measurement endpoint shaped like the control plane's: /ping, /download?bytes=N, POST /upload. */
async function endpoint(behaviour: Behaviour = {}) {
  const seen = { downloadBytesAsked: 0, uploadedBytes: 0, pings: 0 };
  const server = createServer((request, response) => {
    const url = new URL(request.url ?? '/', 'http://x');
    if (url.pathname === '/nettest/ping') {
      seen.pings += 1;
      response.writeHead(behaviour.failPing ? 503 : 200, { 'content-type': 'application/json' }).end('{"pong":true}');
      return;
    }
    if (url.pathname === '/nettest/download') {
      const bytes = Number(url.searchParams.get('bytes'));
      seen.downloadBytesAsked = bytes;
      if (behaviour.downloadStatus !== undefined) {
        response.writeHead(behaviour.downloadStatus).end();
        return;
      }
      response.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(bytes) });
      if (behaviour.slowDownload) {
        // A trickle that would take far longer than the bound.
        let sent = 0;
        const timer = setInterval(() => {
          if (response.destroyed || sent >= bytes) return clearInterval(timer);
          response.write(Buffer.alloc(1024));
          sent += 1024;
        }, 20);
        response.on('close', () => clearInterval(timer));
        return;
      }
      response.end(Buffer.alloc(bytes));
      return;
    }
    if (url.pathname === '/nettest/upload' && request.method === 'POST') {
      if (behaviour.slowUpload) {
        // Reads nothing, so the sender stalls once the socket buffers fill.
        request.pause();
        return;
      }
      request.on('data', (chunk: Buffer) => {
        seen.uploadedBytes += chunk.length;
      });
      request.on('end', () =>
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ bytes: seen.uploadedBytes })),
      );
      return;
    }
    response.writeHead(404).end();
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { base: `http://127.0.0.1:${port}/nettest`, seen };
}

const bounds = { maxDownloadBytes: 64 * 1024 * 1024, maxUploadBytes: 64 * 1024 * 1024, pingCount: 3 };

describe('measureNetwork', () => {
  it('measures latency, download and upload against a loopback endpoint', async () => {
    const { base, seen } = await endpoint();
    const result = await measureNetwork(
      { endpoint: base, timeout_ms: 10_000, download_bytes: 4_000_000, upload_bytes: 3_000_000 },
      { bounds },
    );
    expect(result.error).toBeUndefined();
    expect(result.latency_ms).toBeGreaterThanOrEqual(0);
    expect(result.latency_ms).toBeLessThan(1000);
    expect(result.download_mbps).toBeGreaterThan(0);
    expect(result.upload_mbps).toBeGreaterThan(0);
    expect(result.duration_ms).toBeLessThan(10_000);
    // One ping to open the connection, then pingCount measured.
    expect(seen.pings).toBe(4);
    expect(seen.downloadBytesAsked).toBe(4_000_000);
    expect(seen.uploadedBytes).toBe(3_000_000);
  });

  it("transfers no more than the host's own bounds", async () => {
    const { base, seen } = await endpoint();
    await measureNetwork(
      { endpoint: `${base}/`, timeout_ms: 10_000, download_bytes: 500_000_000, upload_bytes: 500_000_000 },
      { bounds: { maxDownloadBytes: 100_000, maxUploadBytes: 70_000, pingCount: 1 } },
    );
    expect(seen.downloadBytesAsked).toBe(100_000);
    expect(seen.uploadedBytes).toBe(70_000);
  });

  it('ends within the time bound when transfers are too slow, reporting the throughput it saw', async () => {
    const { base } = await endpoint({ slowDownload: true, slowUpload: true });
    const started = performance.now();
    const result = await measureNetwork(
      { endpoint: base, timeout_ms: 1500, download_bytes: 50_000_000, upload_bytes: 50_000_000 },
      { bounds },
    );
    const elapsed = performance.now() - started;
    expect(elapsed).toBeLessThan(1500 + 250);
    expect(result.duration_ms).toBeLessThanOrEqual(1500 + 250);
    expect(result.latency_ms).toBeDefined();
    // The trickle moved some bytes before its share ran out: a (low) measurement, not an error.
    expect(result.download_mbps).toBeGreaterThan(0);
    expect(result.download_mbps).toBeLessThan(10);
    // The stalled upload still pushed a socket's worth of bytes, or it failed as timed out; either way, in time.
    if (result.upload_mbps === undefined) expect(result.error).toMatch(/upload: /);
  });

  it('reports each phase that failed and keeps the ones that worked', async () => {
    const { base } = await endpoint({ failPing: true, downloadStatus: 500 });
    const result = await measureNetwork({ endpoint: base, timeout_ms: 5000, download_bytes: 1000, upload_bytes: 1000 }, { bounds });
    expect(result.latency_ms).toBeUndefined();
    expect(result.download_mbps).toBeUndefined();
    expect(result.upload_mbps).toBeGreaterThan(0);
    expect(result.error).toBe('latency: ping answered HTTP 503; download: download answered HTTP 500');
  });

  it('fails every phase, quickly, when nothing listens', async () => {
    const { base } = await endpoint();
    const closed = servers.pop() as Server;
    await new Promise((resolve) => closed.close(resolve));
    const result = await measureNetwork({ endpoint: base, timeout_ms: 5000, download_bytes: 1000, upload_bytes: 1000 }, { bounds });
    expect(result.download_mbps).toBeUndefined();
    expect(result.error).toMatch(
      /^latency: fetch failed: ECONNREFUSED; download: fetch failed: ECONNREFUSED; upload: fetch failed: ECONNREFUSED$/,
    );
  });

  it('refuses an endpoint that is not http(s)', async () => {
    const result = await measureNetwork(
      { endpoint: 'file:///etc/passwd', timeout_ms: 5000, download_bytes: 1, upload_bytes: 1 },
      { bounds },
    );
    expect(result).toEqual({ duration_ms: 0, error: 'the measurement endpoint is not an http(s) URL' });
  });
});
