// `ark jobs events --follow` while the server goes away and comes back (a control plane restarting, a network
// blip): the CLI process keeps following, retries with backoff, and resumes after the last event it printed, none
// twice and none lost. The server here answers the two reads the follower makes, in the control plane's own shapes
// (the events page and the job), on a loopback port that is closed and reopened; the follower is the real `ark`.
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { arkBundle } from '../harness/bundles.js';
import { waitFor } from '../harness/processes.js';
import { arkConfigDir } from './cli-helpers.js';
import { repoRoot } from './host-side-helpers.js';

const JOB_ID = '3f2c9a4e-8b1d-4c7e-9f0a-5d6e7b8c9d0e';

interface Stand {
  events: Array<{ seq: number; at: string; kind: string; message: string; data: Record<string, unknown> }>;
  state: string;
  refuseNext: number;
}

function serve(stand: Stand, port: number): Promise<Server> {
  const server = createServer((request, response) => {
    response.setHeader('content-type', 'application/json');
    if (stand.refuseNext > 0) {
      stand.refuseNext--;
      response.statusCode = 503;
      response.end(
        JSON.stringify({
          error: {
            code: 'UNAVAILABLE',
            message: 'The database is unavailable for a moment; retry the request.',
            retryable: true,
            request_id: 'r',
          },
        }),
      );
      return;
    }
    const path = new URL(request.url ?? '/', 'http://x').pathname;
    if (path === `/api/v1/jobs/${JOB_ID}/events`) {
      response.end(JSON.stringify({ items: stand.events, next_cursor: null }));
    } else if (path === `/api/v1/jobs/${JOB_ID}`) {
      response.end(JSON.stringify({ job_id: JOB_ID, state: stand.state }));
    } else {
      response.statusCode = 404;
      response.end(JSON.stringify({ error: { code: 'NOT_FOUND', message: 'no', retryable: false, request_id: 'r' } }));
    }
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}

async function shut(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

describe('ark jobs events --follow across a server that goes away', () => {
  let server: Server | undefined;
  afterAll(async () => {
    if (server?.listening) await shut(server);
  });

  it('reconnects with backoff and resumes after the last event it printed', async () => {
    const event = (seq: number, kind: string) => ({
      seq,
      at: new Date(Date.UTC(2026, 10, 27, 0, 0, seq)).toISOString(),
      kind,
      message: `${kind} ${seq}`,
      data: {},
    });
    const stand: Stand = { events: [event(1, 'reserved'), event(2, 'accepted')], state: 'RUNNING', refuseNext: 0 };
    server = await serve(stand, 0);
    const port = (server.address() as AddressInfo).port;
    const child = spawn(process.execPath, [arkBundle, 'jobs', 'events', JOB_ID, '--follow', '--json', '--interval', '1s'], {
      cwd: repoRoot,
      env: { ...process.env, ARK_URL: `http://127.0.0.1:${port}`, ARK_API_KEY: `ark_${'a'.repeat(43)}`, ARK_CONFIG_DIR: arkConfigDir() },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
    const printed = () =>
      stdout
        .split('\n')
        .filter((line) => line.trim() !== '')
        .map((line) => JSON.parse(line).seq as number);

    await waitFor(() => printed().length === 2, { timeoutMs: 15_000, description: 'the first two events' });
    // The server goes away; events happen meanwhile; it comes back on the same port, busy for two answers first.
    await shut(server);
    stand.events.push(event(3, 'running'));
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    stand.events.push(event(4, 'stop_requested'));
    stand.refuseNext = 2;
    server = await serve(stand, port);
    await waitFor(() => printed().length === 4, { timeoutMs: 20_000, description: 'the events made while the server was away' });
    stand.events.push(event(5, 'closed'));
    stand.state = 'CLOSED';
    expect(await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve('still running'), 20_000))])).toBe(0);

    expect(printed()).toEqual([1, 2, 3, 4, 5]);
    expect(stderr).toMatch(/retrying in \d/);
  }, 60_000);
});
