import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, type Readable } from 'node:stream';
import { compileChannelSchema, type LogsOpenMessage, LogsDataMessage, LogsEndMessage, ManualClock } from '@ark/shared';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ContainerRuntime, FollowLogsOptions } from '../runtime/container-runtime.js';
import { dockerFrame } from '../runtime/testing/docker-frames.js';
import { type JobContext, type LiveJob, liveJob, silentLogger } from './job-context.js';
import { backlogOf, entryLines, JobLogs, type LogsReply, sinceOf } from './job-logs.js';
import { JOB_RECORD_VERSION, type JobRecord } from './job-record.js';

// The agent's half of job logs (issue 25 item 2) over a real state directory and a Docker log stream the test
// writes: capture with redaction, the answers to logs_open, resuming after a restart, and the rate bound.

const JOB = '5b9d7c1e-2f3a-4b5c-8d6e-7f8091a2b3c4';
const SECRET = 'sk-very-secret-value';
const dataCheck = compileChannelSchema(LogsDataMessage);
const endCheck = compileChannelSchema(LogsEndMessage);

class FollowedRuntime {
  readonly follows: Array<{ id: string; options: FollowLogsOptions; source: PassThrough }> = [];
  async followLogs(id: string, options: FollowLogsOptions): Promise<Readable> {
    const source = new PassThrough();
    this.follows.push({ id, options, source });
    return source;
  }
}

function record(): JobRecord {
  return {
    version: JOB_RECORD_VERSION,
    job_id: JOB,
    fence: '1',
    phase: 'ready',
    launch: {
      job_id: JOB,
      fence: '1',
      image_digest: `busybox@sha256:${'a'.repeat(64)}`,
      gpu_pci_addresses: [],
      env: { API_TOKEN: SECRET, SHORT: 'ab' },
      ports: [],
      ssh_public_keys: [],
      meter_interval_s: 60,
    },
    accepted_at: '2030-01-01T00:00:00.000Z',
    updated_at: '2030-01-01T00:00:00.000Z',
    container_name: `ark-job-${JOB}`,
    volume_name: `ark-job-${JOB}`,
    container_id: 'c0ffee',
    outbox: [],
  };
}

let stateDir: string;
beforeEach(async () => {
  stateDir = await mkdtemp(join(tmpdir(), 'ark-job-logs-'));
});
afterEach(async () => {
  // A capture's last writes may still land while the directory goes: retried, as rm -rf would.
  await rm(stateDir, { recursive: true, force: true, maxRetries: 10, retryDelay: 20 });
});

function build(options: { rateBytesPerS?: number; maxBytes?: number } = {}) {
  const clock = new ManualClock(new Date('2030-01-01T00:00:00.000Z'));
  const runtime = new FollowedRuntime();
  const job: LiveJob = liveJob(record());
  const context = {
    settings: { stateDir },
    runtime: runtime as unknown as ContainerRuntime,
    clock,
    logger: silentLogger,
    jobs: new Map([[JOB, job]]),
    lifecycle: { closing: false },
  } as unknown as JobContext;
  const logs = new JobLogs(context, { maxBytes: options.maxBytes ?? 1024 * 1024, rateBytesPerS: options.rateBytesPerS ?? 1024 * 1024 });
  const sent: LogsReply[] = [];
  const send = (body: LogsReply) => {
    const wire = { v: 1, sid: 's', seq: 1, ...body };
    expect(body.t === 'logs_data' ? dataCheck.Check(wire) : endCheck.Check(wire)).toBe(true);
    sent.push(body);
    return true;
  };
  const open = (streamId: string, fields: Partial<LogsOpenMessage>) =>
    logs.handle({ v: 1, t: 'logs_open', sid: 's', seq: 1, stream_id: streamId, job_id: JOB, limit: 100, follow: false, ...fields }, send);
  return { clock, runtime, job, logs, sent, open };
}

const until = async (check: () => boolean) => {
  for (let i = 0; i < 200 && !check(); i += 1) await new Promise((resolve) => setTimeout(resolve, 5));
  expect(check()).toBe(true);
};
const linesOf = (sent: LogsReply[], streamId: string) =>
  sent.flatMap((body) => (body.t === 'logs_data' && body.stream_id === streamId ? body.lines : []));
const endOf = (sent: LogsReply[], streamId: string) => sent.find((body) => body.t === 'logs_end' && body.stream_id === streamId);

describe('job logs on the agent', () => {
  it('keeps stdout and stderr with their timestamps, the secret redacted, and answers the last lines with cursors', async () => {
    const { runtime, job, logs, sent, open } = build();
    logs.attach(job);
    await until(() => runtime.follows.length === 1);
    const { source } = runtime.follows[0] as { source: PassThrough };
    source.write(dockerFrame(1, `2030-01-01T00:00:01.000000001Z hello ${SECRET} ab\n`));
    source.write(dockerFrame(2, '2030-01-01T00:00:02.5Z oops\n'));
    source.end(dockerFrame(1, `2030-01-01T00:00:03Z ${'x'.repeat(9000)}\n`));
    await new Promise((resolve) => setTimeout(resolve, 20));
    open('a', { limit: 3 });
    await until(() => endOf(sent, 'a') !== undefined);
    const lines = linesOf(sent, 'a');
    expect(lines.map((line) => [line.cursor, line.stream, line.at])).toEqual([
      ['2', 'stderr', '2030-01-01T00:00:02.5Z'],
      ['3', 'stdout', '2030-01-01T00:00:03Z'],
      ['4', 'stdout', '2030-01-01T00:00:03Z'],
    ]);
    // The long line is split at 8192 characters.
    expect([lines[1]?.text.length, lines[2]?.text.length]).toEqual([8192, 9000 - 8192]);
    open('b', { limit: 10, after: '0' });
    await until(() => endOf(sent, 'b') !== undefined);
    expect(linesOf(sent, 'b')[0]?.text).toBe('hello [redacted] ab');
    expect(endOf(sent, 'b')).toEqual({ t: 'logs_end', stream_id: 'b' });
  });

  it('follows: the kept lines, then each new line, then the end when the container ends', async () => {
    const { runtime, job, logs, sent, open } = build();
    logs.attach(job);
    await until(() => runtime.follows.length === 1);
    const { source } = runtime.follows[0] as { source: PassThrough };
    source.write(dockerFrame(1, '2030-01-01T00:00:01Z one\n'));
    await new Promise((resolve) => setTimeout(resolve, 20));
    open('f', { limit: 10, follow: true });
    await until(() => linesOf(sent, 'f').length === 1);
    source.write(dockerFrame(1, '2030-01-01T00:00:02Z two\n'));
    await until(() => linesOf(sent, 'f').length === 2);
    expect(endOf(sent, 'f')).toBeUndefined();
    source.end();
    await until(() => endOf(sent, 'f') !== undefined);
    expect(linesOf(sent, 'f').map((line) => line.text)).toEqual(['one', 'two']);
  });

  it('after a restart re-attaches from the last kept timestamp and keeps nothing twice; the clean removes the log', async () => {
    const first = build();
    first.logs.attach(first.job);
    await until(() => first.runtime.follows.length === 1);
    const source = (first.runtime.follows[0] as { source: PassThrough }).source;
    source.write(dockerFrame(1, '2030-01-01T00:00:01.000000005Z before\n'));
    await new Promise((resolve) => setTimeout(resolve, 20));
    first.logs.close();

    const second = build();
    second.logs.attach(second.job);
    await until(() => second.runtime.follows.length === 1);
    const again = second.runtime.follows[0] as { options: FollowLogsOptions; source: PassThrough };
    expect(again.options.since).toBe(sinceOf('2030-01-01T00:00:01.000000005Z'));
    expect(again.options.since).toBe('1893456001.000000005');
    // Docker's since is inclusive: the last kept line comes again and is skipped.
    again.source.write(dockerFrame(1, '2030-01-01T00:00:01.000000005Z before\n'));
    again.source.end(dockerFrame(1, '2030-01-01T00:00:09Z while down\n'));
    await new Promise((resolve) => setTimeout(resolve, 20));
    second.open('r', { limit: 10 });
    await until(() => endOf(second.sent, 'r') !== undefined);
    expect(linesOf(second.sent, 'r').map((line) => [line.cursor, line.text])).toEqual([
      ['1', 'before'],
      ['2', 'while down'],
    ]);
    await second.logs.remove(JOB);
    expect(await readdir(join(stateDir, 'logs'))).toEqual([]);
    second.open('gone', { limit: 10 });
    await until(() => endOf(second.sent, 'gone') !== undefined);
    expect(linesOf(second.sent, 'gone')).toEqual([]);
  });

  it('drops followed lines past the rate bound and says how many once there is room, without holding the stream', async () => {
    const { clock, runtime, job, logs, sent, open } = build({ rateBytesPerS: 1024 });
    logs.attach(job);
    await until(() => runtime.follows.length === 1);
    const { source } = runtime.follows[0] as { source: PassThrough };
    open('f', { limit: 0, follow: true });
    await new Promise((resolve) => setTimeout(resolve, 20));
    // The bucket holds 128 KiB (two whole frames); 400 lines of 1 KiB pass it.
    for (let i = 0; i < 400; i += 1)
      source.write(dockerFrame(1, `2030-01-01T00:00:01Z ${String(i).padStart(4, '0')}${'y'.repeat(1020)}\n`));
    await until(() => linesOf(sent, 'f').length > 0);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const passed = linesOf(sent, 'f');
    expect(passed.length).toBeGreaterThan(50);
    expect(passed.length).toBeLessThan(200);
    // Once the bucket is half full again (64 KiB at 1 KiB/s): one note says how many were dropped, with their cursors.
    await clock.advance(60_000);
    expect(linesOf(sent, 'f').some((line) => line.stream === 'ark')).toBe(false);
    await clock.advance(10_000);
    await until(() => linesOf(sent, 'f').some((line) => line.stream === 'ark'));
    const note = linesOf(sent, 'f').find((line) => line.stream === 'ark');
    expect(note?.text).toMatch(new RegExp(`^${400 - passed.length} lines dropped \\(cursors ${passed.length + 1} to 400\\)`));
    expect(note?.cursor).toBe('400');
    // Everything stays on disk: a read after the first dropped cursor gets them, paced by the same bound (about
    // 300 KiB at 1 KiB/s: some five minutes of the test's clock), never cut.
    open('r', { limit: 1000, after: String(passed.length) });
    for (let step = 0; step < 100 && endOf(sent, 'r') === undefined; step += 1) {
      await new Promise((resolve) => setTimeout(resolve, 5));
      await clock.advance(10_000);
    }
    expect(endOf(sent, 'r')).toEqual({ t: 'logs_end', stream_id: 'r' });
    expect(clock.now().getTime() - Date.parse('2030-01-01T00:01:10Z')).toBeGreaterThan(200_000);
    expect(linesOf(sent, 'r')).toHaveLength(400 - passed.length);
  });

  it('tries the capture again while Docker does not answer, and a follower waiting meanwhile gets the lines', async () => {
    const { clock, runtime, job, logs, sent, open } = build();
    let refusals = 1;
    const follow = runtime.followLogs.bind(runtime);
    runtime.followLogs = async (id, options) => {
      if (refusals-- > 0) throw new Error('connect ENOENT /var/run/docker.sock');
      return follow(id, options);
    };
    logs.attach(job);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(runtime.follows).toHaveLength(0);
    open('f', { limit: 10, follow: true });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(endOf(sent, 'f')).toBeUndefined();
    await clock.advance(5_000);
    await until(() => runtime.follows.length === 1);
    (runtime.follows[0] as { source: PassThrough }).source.write(dockerFrame(1, '2030-01-01T00:00:06Z back\n'));
    await until(() => linesOf(sent, 'f').length === 1);
    expect(linesOf(sent, 'f')[0]?.text).toBe('back');
  });

  it('a follower whose first answer is still paced out keeps what it hears up to a bound; one note counts the rest', async () => {
    const { clock, runtime, job, logs, sent, open } = build({ rateBytesPerS: 1024 });
    logs.attach(job);
    await until(() => runtime.follows.length === 1);
    const { source } = runtime.follows[0] as { source: PassThrough };
    for (let i = 0; i < 300; i += 1)
      source.write(dockerFrame(1, `2030-01-01T00:00:01Z kept ${String(i).padStart(4, '0')}${'k'.repeat(1000)}\n`));
    await new Promise((resolve) => setTimeout(resolve, 30));
    open('f', { limit: 300, follow: true });
    await until(() => linesOf(sent, 'f').length > 0);
    // The answer (300 KiB) waits for the bucket; meanwhile the job writes 6000 more lines.
    for (let i = 0; i < 6000; i += 1) source.write(dockerFrame(1, `2030-01-01T00:00:02Z new ${i}\n`));
    await new Promise((resolve) => setTimeout(resolve, 50));
    for (let step = 0; step < 200 && !linesOf(sent, 'f').some((line) => line.stream === 'ark'); step += 1) {
      await clock.advance(5_000);
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    const lines = linesOf(sent, 'f');
    expect(lines.filter((line) => line.text.startsWith('kept'))).toHaveLength(300);
    const fresh = lines.filter((line) => line.text.startsWith('new'));
    const note = lines.find((line) => line.stream === 'ark');
    expect(Number(/^(\d+) lines dropped/.exec(note?.text ?? '')?.[1]) + fresh.length).toBe(6000);
    expect(note?.cursor).toBe('6300');
    const cursors = lines.map((line) => Number(line.cursor));
    expect(cursors).toEqual([...cursors].sort((a, b) => a - b));
  });

  it('rotates the file at half its bound, so a job keeps at most its bound', async () => {
    const { runtime, job, logs, sent, open } = build({ maxBytes: 64 * 1024 });
    logs.attach(job);
    await until(() => runtime.follows.length === 1);
    const { source } = runtime.follows[0] as { source: PassThrough };
    for (let i = 0; i < 300; i += 1) source.write(dockerFrame(1, `2030-01-01T00:00:01Z ${String(i).padStart(4, '0')}${'z'.repeat(500)}\n`));
    source.end();
    await new Promise((resolve) => setTimeout(resolve, 50));
    open('all', { limit: 1000, after: '0' });
    await until(() => endOf(sent, 'all') !== undefined);
    const kept = linesOf(sent, 'all');
    expect(kept.length).toBeLessThan(130);
    expect(kept.length).toBeGreaterThan(50);
    expect(kept.at(-1)?.cursor).toBe('300');
  });
});

describe('pure parts', () => {
  it('splits an entry into timestamped lines', () => {
    expect(entryLines('2030-01-01T00:00:01Z a b\r\n', 'x')).toEqual([{ t: '2030-01-01T00:00:01Z', l: 'a b' }]);
    expect(entryLines('no stamp', '2030-01-01T00:00:00Z')).toEqual([{ t: '2030-01-01T00:00:00Z', l: 'no stamp' }]);
  });

  it('answers the last lines, the oldest after a cursor, or when following the newest after it with a note', () => {
    const kept = [1, 2, 3, 4, 5].map((n) => ({ n, s: 'stdout' as const, t: '2030-01-01T00:00:01Z', l: `l${n}` }));
    expect(backlogOf(kept, { limit: 2, follow: false }).map((line) => line.n)).toEqual([4, 5]);
    expect(backlogOf(kept, { limit: 0, follow: true })).toEqual([]);
    expect(backlogOf(kept, { limit: 2, after: '1', follow: false }).map((line) => line.n)).toEqual([2, 3]);
    const resumed = backlogOf(kept, { limit: 2, after: '1', follow: true });
    expect(resumed.map((line) => [line.n, line.s])).toEqual([
      [3, 'ark'],
      [4, 'stdout'],
      [5, 'stdout'],
    ]);
    expect(resumed[0]?.l).toBe('2 lines skipped (cursors 2 to 3): more than 2 were written since the cursor');
  });
});
