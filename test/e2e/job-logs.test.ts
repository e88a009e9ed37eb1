// Job logs on real parts, on each store (issue 25 item 2): a job RUNNING on a paired `ark-agent run` over the private
// dockerd; what its container writes to stdout and stderr (the test writes through its PID 1's descriptors with
// `docker exec`) reaches `ark jobs logs -f` within a second of Docker's timestamp, with the job's secret redacted;
// the one-off read answers the last lines with cursors; Server-Sent Events resume after Last-Event-ID. On SQLite also:
// the agent restarted while the container writes (nothing lost, nothing twice, the CLI rides it out), and a job
// writing far past the rate bound, whose excess is dropped from the stream with one note while the channel carries
// on. After the stop the logs are read in the retrieval window; once the job is CLOSED they are gone, on disk too.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { arkBundle } from '../harness/bundles.js';
import { isDockerAvailable } from '../harness/dockerd.js';
import { freePort, waitFor } from '../harness/processes.js';
import { arkConfigDir } from './cli-helpers.js';
import { api, repoRoot, startControlPlane } from './host-side-helpers.js';
import { DIALECTS, type DockerWorld, RentalSite, startDockerWorld } from './rental-helpers.js';

const SECRET = 'sk-logs-secret-4c1f9a';
/** The agent's bound in this test: small, so a shell loop passes it at once. */
const RATE_BYTES_PER_S = 16 * 1024;

interface LogLine {
  cursor: string;
  stream: 'stdout' | 'stderr' | 'ark';
  at: string;
  text: string;
}

/** A Server-Sent Events reader over fetch: the events as they come, with the time each arrived. */
class EventReader {
  readonly events: Array<{ id?: string; event: string; data: string; receivedAt: number }> = [];
  readonly controller = new AbortController();
  headers: Headers | undefined;
  status = 0;
  done: Promise<void>;

  constructor(url: string, headers: Record<string, string>) {
    this.done = this.#read(url, headers).catch(() => undefined);
  }

  async #read(url: string, headers: Record<string, string>): Promise<void> {
    const response = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: this.controller.signal });
    this.status = response.status;
    this.headers = response.headers;
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (block.startsWith(':')) continue;
        const field = (name: string) =>
          block
            .split('\n')
            .find((line) => line.startsWith(`${name}: `))
            ?.slice(name.length + 2);
        this.events.push({ id: field('id'), event: field('event') ?? 'message', data: field('data') ?? '', receivedAt: Date.now() });
      }
    }
  }

  lines(): LogLine[] {
    return this.events.filter((event) => event.event === 'line').map((event) => JSON.parse(event.data) as LogLine);
  }

  close(): void {
    this.controller.abort();
  }
}

/** `ark jobs logs JOB -f --json`, its NDJSON lines with the time each was printed. */
class CliFollower {
  readonly printed: Array<{ line: LogLine; printedAt: number }> = [];
  stderr = '';
  readonly child: ChildProcessWithoutNullStreams;
  readonly exited: Promise<number | null>;

  constructor(site: RentalSite, jobId: string) {
    this.child = spawn(process.execPath, [arkBundle, 'jobs', 'logs', jobId, '-f', '--tail', '0', '--json', '--retry-for', '2m'], {
      cwd: repoRoot,
      env: { ...process.env, ARK_URL: site.cp.base, ARK_API_KEY: site.renterKey, ARK_PASSWORD: '', ARK_CONFIG_DIR: arkConfigDir() },
    });
    let pending = '';
    this.child.stdout.on('data', (chunk: Buffer) => {
      pending += chunk.toString('utf8');
      for (let end = pending.indexOf('\n'); end >= 0; end = pending.indexOf('\n')) {
        const text = pending.slice(0, end);
        pending = pending.slice(end + 1);
        if (text.trim() !== '') this.printed.push({ line: JSON.parse(text) as LogLine, printedAt: Date.now() });
      }
    });
    this.child.stderr.on('data', (chunk: Buffer) => {
      this.stderr += chunk.toString('utf8');
    });
    this.exited = new Promise((resolve) => this.child.once('close', (code) => resolve(code)));
  }

  texts(): string[] {
    return this.printed.map((entry) => entry.line.text);
  }
}

describe.skipIf(!isDockerAvailable())('job logs on real parts', () => {
  let world: DockerWorld;

  beforeAll(async () => {
    world = await startDockerWorld();
  }, 180_000);

  afterAll(async () => {
    await world?.stop();
  }, 60_000);

  describe.each(DIALECTS)('on %s', (dialect) => {
    let site: RentalSite;
    let jobId = '';
    let follower: CliFollower | undefined;
    /** Writes a line to the container's stdout (or stderr) as its main process would. */
    const write = (text: string, fd: 1 | 2 = 1) =>
      world.daemon.docker(['exec', `ark-job-${jobId}`, 'sh', '-c', `echo "${text}" > /proc/1/fd/${fd}`], { timeoutMs: 20_000 });
    const logs = (query: string) => site.renter('GET', `/api/v1/jobs/${jobId}/logs${query}`);

    beforeAll(async () => {
      site = await RentalSite.start(dialect, world, {
        agentConfig: { job_log_rate_bytes_per_s: RATE_BYTES_PER_S },
        cpEnv: { ARK_RETRIEVAL_WINDOW_S: '4' },
        // On Postgres the site is one replica of two: a second one answers through it in its own test.
        replica: dialect === 'postgres',
      });
      jobId = (await site.reserve({ budgetMicro: 5_000_000n, env: { API_TOKEN: SECRET } })).jobId;
      await site.waitState(jobId, 'RUNNING');
    }, 180_000);

    afterAll(async () => {
      follower?.child.kill('SIGKILL');
      await site?.stop();
    }, 60_000);

    it('ark jobs logs -f prints a line within a second of the container writing it, the secret redacted', { timeout: 60_000 }, async () => {
      follower = new CliFollower(site, jobId);
      const cli = follower;
      // Until the follower's stream is up, a line may land before it: write until one is printed.
      await waitFor(
        async () => {
          if (cli.printed.length > 0) return true;
          await write('warming up');
          return cli.printed.length > 0;
        },
        { timeoutMs: 30_000, intervalMs: 300, description: 'the CLI to follow' },
      );
      await write(`hello with ${SECRET} inside`);
      await write('oops on stderr', 2);
      const printed = await waitFor(
        () => {
          const found = cli.printed.filter((entry) => entry.line.text.startsWith('hello') || entry.line.text.startsWith('oops'));
          return found.length === 2 ? found : undefined;
        },
        { timeoutMs: 10_000, intervalMs: 20, description: 'the two lines in the CLI' },
      );
      expect(printed.map((entry) => [entry.line.stream, entry.line.text])).toEqual([
        ['stdout', 'hello with [redacted] inside'],
        ['stderr', 'oops on stderr'],
      ]);
      // Docker stamps the line when the container writes it; the CLI printed it less than a second later.
      for (const entry of printed) expect(entry.printedAt - Date.parse(entry.line.at)).toBeLessThan(1000);
      expect(cli.stderr).not.toContain(SECRET);
    });

    it('answers the last lines as JSON with cursors, and resumes a follow after Last-Event-ID', async () => {
      const tail = await logs('?tail=2');
      expect(tail.status).toBe(200);
      expect(tail.body.lines.map((line: LogLine) => [line.stream, line.text])).toEqual([
        ['stdout', 'hello with [redacted] inside'],
        ['stderr', 'oops on stderr'],
      ]);
      const [hello, oops] = tail.body.lines as LogLine[];
      expect(tail.body.cursor).toBe(oops?.cursor);
      expect(Number(oops?.cursor)).toBe(Number(hello?.cursor) + 1);
      expect(JSON.stringify((await logs('?tail=1000')).body)).not.toContain(SECRET);
      // After a cursor: the lines that follow it.
      expect((await logs(`?cursor=${hello?.cursor}&tail=5`)).body.lines.map((line: LogLine) => line.text)).toEqual(['oops on stderr']);

      const reader = new EventReader(`${site.cp.base}/api/v1/jobs/${jobId}/logs?follow=true`, {
        authorization: `Bearer ${site.renterKey}`,
        'last-event-id': hello?.cursor as string,
        'accept-encoding': 'gzip, br',
      });
      try {
        await waitFor(() => reader.lines().length >= 1, { timeoutMs: 10_000, intervalMs: 20, description: 'the resumed line' });
        expect(reader.status).toBe(200);
        expect(reader.headers?.get('content-type')).toMatch(/^text\/event-stream/);
        expect(reader.headers?.get('x-accel-buffering')).toBe('no');
        expect(reader.headers?.get('content-encoding') ?? 'identity').toBe('identity');
        expect(reader.lines()[0]).toEqual(oops);
        expect(reader.events[0]?.id).toBe(oops?.cursor);
      } finally {
        reader.close();
      }
      // An id that is no job of the renter's is 404; a tail past the bound is refused.
      expect((await site.renter('GET', `/api/v1/jobs/${randomUUID()}/logs`)).status).toBe(404);
      expect((await logs('?tail=1001')).status).toBe(422);
    });

    it.runIf(dialect === 'sqlite')(
      'keeps what the container wrote while the agent was down: nothing lost, nothing twice, and the CLI rides it out',
      { timeout: 90_000 },
      async () => {
        await site.stopAgent();
        await write('written while the agent was down');
        await site.startAgent();
        const all = await waitFor(
          async () => {
            const answer = await logs('?tail=1000');
            return answer.status === 200 && answer.body.lines.some((line: LogLine) => line.text.includes('while the agent was down'))
              ? (answer.body.lines as LogLine[])
              : undefined;
          },
          { timeoutMs: 30_000, intervalMs: 300, description: 'the line written while the agent was down' },
        );
        const texts = all.map((line) => line.text);
        expect(texts.filter((text) => text.startsWith('hello'))).toHaveLength(1);
        expect(texts.filter((text) => text.includes('while the agent was down'))).toHaveLength(1);
        const cursors = all.map((line) => Number(line.cursor));
        expect(cursors).toEqual([...cursors].sort((a, b) => a - b));
        expect(new Set(cursors).size).toBe(cursors.length);
        // The CLI reconnected after the agent came back and printed that line once, after the others.
        const cli = follower as CliFollower;
        await waitFor(() => cli.texts().includes('written while the agent was down'), {
          timeoutMs: 30_000,
          intervalMs: 50,
          description: 'the CLI to print the line written while the agent was down',
        });
        expect(cli.texts().filter((text) => text.startsWith('hello'))).toHaveLength(1);
        expect(cli.texts().filter((text) => text.includes('while the agent was down'))).toHaveLength(1);
      },
    );

    it.runIf(dialect === 'sqlite')(
      'a job writing far past the bound is throttled: its excess is dropped from the stream with one note, the channel carries on',
      { timeout: 60_000 },
      async () => {
        const reader = new EventReader(`${site.cp.base}/api/v1/jobs/${jobId}/logs?follow=true&tail=0`, {
          authorization: `Bearer ${site.renterKey}`,
        });
        try {
          await waitFor(() => reader.status === 200, { timeoutMs: 10_000, intervalMs: 20, description: 'the stream' });
          const startedAt = Date.now();
          // About 3 MB in well under a second: 20000 lines of 150 bytes.
          const filler = 'f'.repeat(140);
          await world.daemon.docker(
            [
              'exec',
              `ark-job-${jobId}`,
              'sh',
              '-c',
              `i=0; while [ $i -lt 20000 ]; do echo "flood $i ${filler}"; i=$((i+1)); done > /proc/1/fd/1`,
            ],
            { timeoutMs: 60_000 },
          );
          const note = await waitFor(() => reader.lines().find((line) => line.stream === 'ark'), {
            timeoutMs: 20_000,
            intervalMs: 50,
            description: 'the dropped-lines note',
          });
          expect(note.text).toMatch(
            new RegExp(
              `^\\d+ lines dropped \\(cursors \\d+ to \\d+\\): the job wrote faster than its log bound of ${RATE_BYTES_PER_S} bytes/s`,
            ),
          );
          const floodLines = reader.lines().filter((line) => line.text.startsWith('flood'));
          const dropped = Number(/^(\d+) lines dropped/.exec(note.text)?.[1]);
          expect(floodLines.length + dropped).toBeLessThanOrEqual(20000);
          expect(dropped).toBeGreaterThan(10000);
          // What came through stays within the bucket: its burst plus the rate for the time it took.
          const elapsedS = (Date.now() - startedAt) / 1000;
          const bytes = reader.events.reduce((sum, event) => sum + event.data.length, 0);
          expect(bytes).toBeLessThan(Math.max(4 * RATE_BYTES_PER_S, 128 * 1024) + RATE_BYTES_PER_S * elapsedS + 64 * 1024);
          // The channel carried on: a new line comes through on the same stream, the machine stays online, and the
          // dropped lines are still on the machine for a read after the cursor.
          await write('after the flood');
          await waitFor(() => reader.lines().some((line) => line.text === 'after the flood'), {
            timeoutMs: 15_000,
            intervalMs: 50,
            description: 'a line after the flood',
          });
          expect(reader.events.some((event) => event.event === 'error')).toBe(false);
          const machine = await site.renter('GET', `/api/v1/jobs/${jobId}`);
          expect(machine.body.state).toBe('RUNNING');
          const first = Number(/cursors (\d+) to/.exec(note.text)?.[1]);
          const kept = await logs(`?cursor=${first - 1}&tail=3`);
          expect(kept.body.lines.map((line: LogLine) => line.cursor)).toEqual([String(first), String(first + 1), String(first + 2)]);
        } finally {
          reader.close();
        }
      },
    );

    it.runIf(dialect === 'postgres')(
      'a second replica on the same database answers through the one holding the agent’s channel, following included',
      { timeout: 60_000 },
      async () => {
        const port = await freePort();
        const { PORT: _port, ARK_DATA_DIR: _dir, ...shared } = site.cp.env;
        const second = await startControlPlane({
          port,
          databaseUrl: site.database?.url ?? null,
          env: { ...shared, ARK_REPLICA_URL: `http://127.0.0.1:${port}` },
        });
        const reader = new EventReader(`${second.base}/api/v1/jobs/${jobId}/logs?follow=true&tail=1`, {
          authorization: `Bearer ${site.renterKey}`,
        });
        try {
          const tail = await api(second.base, 'GET', `/api/v1/jobs/${jobId}/logs?tail=2`, { token: site.renterKey });
          expect(tail.status).toBe(200);
          expect(tail.body.lines.map((line: LogLine) => line.text)).toEqual(['hello with [redacted] inside', 'oops on stderr']);
          await write('through the other replica');
          await waitFor(() => reader.lines().some((line) => line.text === 'through the other replica'), {
            timeoutMs: 15_000,
            intervalMs: 20,
            description: 'a followed line through the second replica',
          });
          expect(reader.headers?.get('content-type')).toMatch(/^text\/event-stream/);
          // The second replica cannot reach the machine itself: a request it may not forward is refused there.
          const direct = await fetch(`${second.base}/api/v1/jobs/${jobId}/logs`, {
            headers: { authorization: `Bearer ${site.renterKey}`, 'x-ark-logs-hop': '1' },
          });
          expect(direct.status).toBe(503);
          expect(((await direct.json()) as { error: { code: string } }).error.code).toBe('JOB_LOGS_UNREACHABLE');
        } finally {
          reader.close();
          await second.process.stop('SIGTERM');
        }
      },
    );

    it('after the stop the logs are read in the retrieval window and the follow ends; once CLOSED they are gone, on disk too', {
      timeout: 60_000,
    }, async () => {
      const stopped = await site.renter('POST', `/api/v1/jobs/${jobId}/stop`, { reason: 'done' });
      expect(stopped.status).toBe(202);
      await site.waitState(jobId, 'STOPPED');
      // The oldest lines (a small read: the bound paces a big one, and this window is short).
      const inWindow = await logs('?cursor=0&tail=5');
      expect(inWindow.status).toBe(200);
      expect(inWindow.body.lines.some((line: LogLine) => line.text === 'hello with [redacted] inside')).toBe(true);
      // The container ended: the CLI's follow got the end of the stream and exited cleanly.
      expect(await (follower as CliFollower).exited).toBe(0);
      await site.waitState(jobId, 'CLOSED', 30_000);
      const gone = await logs('');
      expect(gone.status).toBe(409);
      expect(gone.body.error.code).toBe('JOB_LOGS_UNAVAILABLE');
      await waitFor(async () => (await readdir(join(site.agentSetup.stateDir, 'logs')).catch(() => [])).length === 0, {
        timeoutMs: 15_000,
        intervalMs: 100,
        description: "the job's log directory removed at clean",
      });
    });
  });
});
