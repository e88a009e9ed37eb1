// Proves the harness end to end on this machine: a private dockerd, an imported busybox image
// pushed to a loopback registry, a pull by digest, containers on host networking, and a clean
// stop that leaves no process, mount or folder behind.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DockerDaemon, isDockerAvailable, pingDocker, startDockerd } from './dockerd.js';
import { buildTestImage, type TestImage } from './images.js';
import { createTestDatabase } from './postgres.js';
import { freePort, isProcessAlive, listProcesses, spawnProcess, waitFor } from './processes.js';

describe('process helpers', () => {
  it('finds a port that can be bound', async () => {
    const port = await freePort();
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', resolve);
    });
    await new Promise((resolve) => server.close(resolve));
  });

  it('spawns, captures output and stops exactly its own PID', async () => {
    const child = spawnProcess('/bin/sh', ['-c', 'echo started; exec sleep 30']);
    await waitFor(() => child.output().includes('started'), { timeoutMs: 5_000 });
    expect(child.isRunning()).toBe(true);
    const exit = await child.stop('SIGTERM', { timeoutMs: 2_000 });
    expect(exit.signal).toBe('SIGTERM');
    expect(isProcessAlive(child.pid)).toBe(false);
  });

  it('escalates to SIGKILL when a process ignores SIGTERM', async () => {
    const child = spawnProcess('/bin/sh', ['-c', 'trap "" TERM; echo ready; while :; do sleep 0.1; done']);
    await waitFor(() => child.output().includes('ready'), { timeoutMs: 5_000 });
    const exit = await child.stop('SIGTERM', { timeoutMs: 300 });
    expect(exit.signal).toBe('SIGKILL');
  });

  it('reports a timeout with the last error', async () => {
    await expect(
      waitFor(
        () => {
          throw new Error('not yet');
        },
        { timeoutMs: 200, intervalMs: 20, description: 'nothing' },
      ),
    ).rejects.toThrow(/waiting for nothing: last error: not yet/);
  });
});

describe('postgres helper', () => {
  it('creates a database that can be used, then drops it', async () => {
    const database = await createTestDatabase();
    const client = new pg.Client({ connectionString: database.url });
    // The forced drop below terminates this session; pg reports that as an 'error' event.
    client.on('error', () => undefined);
    await client.connect();
    const { rows } = await client.query<{ name: string }>('SELECT current_database() AS name');
    expect(rows[0]?.name).toBe(database.name);
    // The drop must succeed even with this session still open.
    await database.drop();
    await client.end().catch(() => undefined);
    const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/test' });
    await admin.connect();
    const left = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [database.name]);
    await admin.end();
    expect(left.rowCount).toBe(0);
  });
});

describe.skipIf(!isDockerAvailable())('docker harness', () => {
  let daemon: DockerDaemon | undefined;
  let image: TestImage | undefined;
  const timings: Record<string, number> = {};

  beforeAll(async () => {
    let started = Date.now();
    daemon = await startDockerd();
    timings.dockerdStartMs = Date.now() - started;
    started = Date.now();
    image = await buildTestImage(daemon);
    timings.imageBuildAndPushMs = Date.now() - started;
  }, 120_000);

  afterAll(async () => {
    await image?.registry.stop();
    await daemon?.stop();
    console.info(`docker harness timings: ${JSON.stringify(timings)}`);
  }, 60_000);

  it('pushes an image that can be pulled by digest after removal', async () => {
    const docker = (daemon as DockerDaemon).docker;
    const pushed = image as TestImage;
    expect(pushed.digestRef).toMatch(/^127\.0\.0\.1:\d+\/ark-test\/busybox@sha256:[0-9a-f]{64}$/);
    await docker(['rmi', pushed.localRef, pushed.ref]);
    const { stdout: before } = await docker(['images', '--quiet']);
    expect(before.trim()).toBe('');
    const started = Date.now();
    await docker(['pull', pushed.digestRef]);
    timings.pullByDigestMs = Date.now() - started;
    const { stdout: digests } = await docker(['image', 'inspect', '--format', '{{json .RepoDigests}}', pushed.digestRef]);
    expect(JSON.parse(digests)).toContain(pushed.digestRef);
  }, 60_000);

  it('runs a container on host networking and reads its output', async () => {
    const docker = (daemon as DockerDaemon).docker;
    const pushed = image as TestImage;
    const started = Date.now();
    const { stdout } = await docker(['run', '--rm', '--network', 'host', pushed.digestRef, 'echo', 'hello from ark']);
    timings.runEchoMs = Date.now() - started;
    expect(stdout.trim()).toBe('hello from ark');
  }, 60_000);

  it('serves HTTP from a container to the host over loopback', async () => {
    const docker = (daemon as DockerDaemon).docker;
    const pushed = image as TestImage;
    const port = await freePort();
    const script = `mkdir -p /www && echo ark-ok > /www/index.html && exec httpd -f -p 127.0.0.1:${port} -h /www`;
    const { stdout: containerId } = await docker(['run', '--detach', '--network', 'host', pushed.digestRef, 'sh', '-c', script]);
    const body = await waitFor(
      async () => {
        const response = await fetch(`http://127.0.0.1:${port}/index.html`);
        return response.ok ? response.text() : false;
      },
      { timeoutMs: 10_000, description: 'busybox httpd in the container' },
    );
    expect(body.trim()).toBe('ark-ok');
    // Left running on purpose: stop() must clean up running containers too.
    expect(containerId.trim()).toMatch(/^[0-9a-f]{64}$/);
  }, 60_000);

  it('stops the daemon and leaves nothing behind', async () => {
    const running = daemon as DockerDaemon;
    const registry = (image as TestImage).registry;
    const started = Date.now();
    await running.stop();
    timings.dockerdStopMs = Date.now() - started;
    await registry.stop();
    expect(isProcessAlive(running.pid)).toBe(false);
    expect(isProcessAlive(registry.pid)).toBe(false);
    expect(await pingDocker(running.socketPath)).toBe(false);
    const leftovers = (await listProcesses()).filter((info) => info.commandLine.includes(running.directory));
    expect(leftovers).toEqual([]);
    const mounts = await readFile('/proc/self/mountinfo', 'utf8');
    expect(mounts.includes(running.directory)).toBe(false);
    expect(existsSync(running.directory)).toBe(false);
    expect(existsSync(registry.directory)).toBe(false);
  }, 60_000);
});
