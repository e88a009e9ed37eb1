import { type Server, createServer } from 'node:http';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkHealth, pingDocker } from './health.js';

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

async function fakeEngineSocket(status: number): Promise<string> {
  const path = join(mkdtempSync(join(tmpdir(), 'ark-agent-docker-')), 'docker.sock');
  const server = createServer((request, response) => {
    response.writeHead(request.url === '/_ping' ? status : 404).end('OK');
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(path, resolve));
  return path;
}

describe('checkHealth', () => {
  it('is healthy when the engine answers its ping and the disk has room', async () => {
    const socketPath = await fakeEngineSocket(200);
    expect(await checkHealth({ docker: { socketPath, required: true }, diskPath: tmpdir(), minDiskFreeBytes: 1 })).toEqual([]);
  });

  it('names an unreachable or failing engine', async () => {
    expect(await pingDocker('/nonexistent/docker.sock', 1000)).toBe('docker engine unreachable at /nonexistent/docker.sock: ENOENT');
    const failing = await fakeEngineSocket(500);
    expect(await pingDocker(failing, 1000)).toBe(`docker engine answered HTTP 500 at ${failing}`);
  });

  it('skips the engine when it is not required', async () => {
    expect(await checkHealth({ docker: { socketPath: '/nonexistent', required: false }, diskPath: tmpdir(), minDiskFreeBytes: 0 })).toEqual(
      [],
    );
  });

  it('reports a nearly full disk', async () => {
    const problems = await checkHealth({
      docker: { socketPath: '/x', required: false },
      diskPath: tmpdir(),
      minDiskFreeBytes: Number.MAX_SAFE_INTEGER,
    });
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^disk nearly full: [\d.]+ GiB free, at least \d+\.\d GiB needed$/);
  });
});
