import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { checkReadiness, NotReadyError, probeTcp } from './readiness.js';

const key = 'k'.repeat(43);

describe('readiness probes', () => {
  const servers: Array<{ close(callback: () => void): unknown }> = [];
  afterEach(async () => {
    for (const server of servers.splice(0)) await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  async function engine(handler: Parameters<typeof createServer>[1]): Promise<number> {
    const server: Server = createServer(handler);
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return (server.address() as AddressInfo).port;
  }

  it('passes an HTTP health path and a model list asked with the job key', async () => {
    const port = await engine((req, res) => {
      if (req.url === '/health') return res.writeHead(200).end('ok');
      if (req.url === '/v1/models' && req.headers.authorization === `Bearer ${key}`) {
        return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ object: 'list', data: [{ id: 'tiny' }] }));
      }
      res.writeHead(401).end();
    });
    expect(await checkReadiness({ host: '127.0.0.1', health: { port, path: '/health' }, models: { port, apiKey: key } }, 1000)).toEqual({
      health: 'http 200',
      models: 'http 200, 1 model(s)',
    });
    await expect(checkReadiness({ host: '127.0.0.1', models: { port, apiKey: 'x'.repeat(43) } }, 1000)).rejects.toThrow(/status 401/);
  });

  it('is not ready while the port is closed, answers 5xx, or the model list is empty', async () => {
    const closed = await engine(() => undefined);
    const [server] = servers.splice(0) as [Server];
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await expect(probeTcp('127.0.0.1', closed, 500)).rejects.toBeInstanceOf(NotReadyError);
    const port = await engine((req, res) => (req.url === '/v1/models' ? res.writeHead(200).end('{"data":[]}') : res.writeHead(503).end()));
    await expect(checkReadiness({ host: '127.0.0.1', health: { port, path: '/' } }, 1000)).rejects.toThrow(/status 503/);
    await expect(checkReadiness({ host: '127.0.0.1', models: { port, apiKey: key } }, 1000)).rejects.toThrow(/no model loaded/);
  });

  it('passes a TCP health port and times out a silent HTTP one', async () => {
    // Reads and never answers; resume() lets closed client sockets end so close() returns.
    const silent = createTcpServer((socket) => socket.resume());
    servers.push(silent);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as AddressInfo).port;
    expect(await checkReadiness({ host: '127.0.0.1', health: { port } }, 1000)).toEqual({ health: `tcp connect :${port}` });
    const started = Date.now();
    await expect(checkReadiness({ host: '127.0.0.1', health: { port, path: '/' } }, 300)).rejects.toThrow(/no answer within 300 ms/);
    expect(Date.now() - started).toBeLessThan(2000);
  });
});
