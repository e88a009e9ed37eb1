import type { JobLogLine, LogsAgentMessage } from '@ark/shared';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../clock.js';
import type { JobRecord } from '../domain/jobs/job.js';
import { JobLogReader } from './job-logs.js';
import { LogTunnel } from './tunnel.js';

// The control plane's half of job logs (issue 25 item 2) with the wire recorded: what a request sends, how the
// agent's frames reach the reader, failures as the API's errors, and which jobs have logs at all.

const MACHINE = '11111111-1111-4111-8111-111111111111';
const OTHER = '22222222-2222-4222-8222-222222222222';
const JOB_ID = '33333333-3333-4333-8333-333333333333';
const frame = (msg: Record<string, unknown>) => ({ v: 1, sid: 's', seq: 1, ...msg }) as unknown as LogsAgentMessage;
const line = (cursor: string, text: string): JobLogLine => ({ cursor, stream: 'stdout', at: '2030-01-01T00:00:01Z', text });

function wire(connected = true) {
  const sent: Array<{ machineId: string; body: Record<string, unknown> }> = [];
  const tunnel = new LogTunnel((machineId, body) => {
    sent.push({ machineId, body });
    return connected;
  });
  return { tunnel, sent };
}

const job = (fields: Partial<JobRecord>) =>
  ({ id: JOB_ID, machineId: MACHINE, state: 'RUNNING', retrievalUntil: null, ...fields }) as unknown as JobRecord;

describe('job logs through the tunnel', () => {
  it('reads the lines of one request until logs_end, ignoring another machine’s frames, with the last cursor', async () => {
    const { tunnel, sent } = wire();
    const reader = new JobLogReader(tunnel, new ManualClock());
    const answer = reader.read(job({}), { limit: 5, after: '3' });
    expect(sent[0]).toMatchObject({ machineId: MACHINE, body: { t: 'logs_open', job_id: JOB_ID, limit: 5, after: '3', follow: false } });
    const streamId = sent[0]?.body.stream_id as string;
    tunnel.receive(OTHER, frame({ t: 'logs_data', stream_id: streamId, lines: [line('9', 'not mine')] }));
    tunnel.receive(MACHINE, frame({ t: 'logs_data', stream_id: streamId, lines: [line('4', 'a'), line('5', 'b')] }));
    tunnel.receive(MACHINE, frame({ t: 'logs_end', stream_id: streamId }));
    expect(await answer).toEqual({ lines: [line('4', 'a'), line('5', 'b')], cursor: '5' });
    expect(tunnel.openCount).toBe(0);
  });

  it('answers 503 when the machine is not connected or does not answer in time, 409 when the log is gone', async () => {
    const offline = new JobLogReader(wire(false).tunnel, new ManualClock());
    await expect(offline.read(job({}), { limit: 1 })).rejects.toMatchObject({ code: 'JOB_LOGS_UNREACHABLE' });

    const clock = new ManualClock();
    const silent = wire();
    const late = new JobLogReader(silent.tunnel, clock).read(job({}), { limit: 1 }).catch((error: unknown) => error);
    await clock.advance(120_000);
    expect(await late).toMatchObject({ code: 'JOB_LOGS_UNREACHABLE' });
    expect(silent.sent.map((sent) => sent.body.t)).toEqual(['logs_open', 'logs_cancel']);

    const { tunnel, sent } = wire();
    const gone = new JobLogReader(tunnel, new ManualClock()).read(job({}), { limit: 1 });
    tunnel.receive(MACHINE, frame({ t: 'logs_end', stream_id: sent[0]?.body.stream_id, error: 'not_found', detail: 'cleaned' }));
    await expect(gone).rejects.toMatchObject({ code: 'JOB_LOGS_UNAVAILABLE' });
  });

  it('follows until cancelled (the agent is told) or the machine’s connection ends', () => {
    const { tunnel, sent } = wire();
    const reader = new JobLogReader(tunnel, new ManualClock());
    const got: string[] = [];
    const ends: unknown[] = [];
    const sink = {
      lines: (lines: JobLogLine[]) => got.push(...lines.map((l) => l.text)),
      ended: (failure?: unknown) => ends.push(failure),
    };
    const first = reader.follow(job({}), { limit: 0 }, sink);
    reader.follow(job({}), { limit: 0 }, sink);
    const [a, b] = [sent[0]?.body.stream_id, sent[1]?.body.stream_id];
    expect(sent[0]?.body).toMatchObject({ follow: true, limit: 0 });
    tunnel.receive(MACHINE, frame({ t: 'logs_data', stream_id: a, lines: [line('1', 'x')] }));
    first.cancel();
    expect(sent[2]?.body).toEqual({ t: 'logs_cancel', stream_id: a });
    tunnel.receive(MACHINE, frame({ t: 'logs_data', stream_id: a, lines: [line('2', 'late')] }));
    tunnel.machineGone(MACHINE);
    expect(got).toEqual(['x']);
    expect(ends).toEqual([{ reason: 'disconnected', detail: "the machine's connection ended" }]);
    expect(b).toBeDefined();
  });

  it('has logs while the job runs or stops, and through the retrieval window after', () => {
    const now = new Date('2030-01-01T00:00:00Z');
    for (const state of ['RUNNING', 'STOPPING'] as const) expect(() => JobLogReader.assertReadable(job({ state }), now)).not.toThrow();
    const within = job({ state: 'STOPPED', retrievalUntil: new Date('2030-01-01T00:00:01Z') });
    expect(() => JobLogReader.assertReadable(within, now)).not.toThrow();
    const after = job({ state: 'STOPPED', retrievalUntil: new Date('2030-01-01T00:00:00Z') });
    expect(() => JobLogReader.assertReadable(after, now)).toThrow(/retrieval window has ended/);
    for (const state of ['RESERVED', 'STARTING', 'CLOSED', 'FAILED', 'CLEANING'] as const) {
      expect(() => JobLogReader.assertReadable(job({ state }), now)).toThrow(expect.objectContaining({ code: 'JOB_LOGS_UNAVAILABLE' }));
    }
  });
});
