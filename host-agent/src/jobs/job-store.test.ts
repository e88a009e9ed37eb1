import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { JOB_RECORD_VERSION, type JobRecord } from './job-record.js';
import { JobStore } from './job-store.js';

const jobId = '00000000-0000-4000-8000-0000000000aa';

function record(phase: JobRecord['phase']): JobRecord {
  return {
    version: JOB_RECORD_VERSION,
    job_id: jobId,
    fence: '1',
    phase,
    accepted_at: '2030-01-01T00:00:00.000Z',
    updated_at: '2030-01-01T00:00:00.000Z',
    container_name: `ark-job-${jobId}`,
    volume_name: `ark-job-${jobId}`,
    outbox: [],
  };
}

describe('JobStore', () => {
  let stateDir: string;
  beforeEach(async () => {
    stateDir = await mkdtemp(join(tmpdir(), 'ark-jobstore-'));
  });
  afterEach(async () => {
    await rm(stateDir, { recursive: true, force: true });
  });

  it('writes records atomically, readable by the agent only, and keeps the last of concurrent writes', async () => {
    const store = new JobStore(stateDir);
    await Promise.all((['accepted', 'pulling', 'starting', 'ready'] as const).map((phase) => store.save(record(phase))));
    const [loaded] = await store.loadAll();
    expect(loaded?.phase).toBe('ready');
    expect((await stat(store.recordPath(jobId))).mode & 0o777).toBe(0o600);
    expect(await readdir(join(stateDir, 'jobs'))).toEqual([`${jobId}.json`]);
  });

  it('sets unreadable records aside and removes interrupted writes', async () => {
    const store = new JobStore(stateDir);
    await store.save(record('ready'));
    const other = '00000000-0000-4000-8000-0000000000bb';
    await writeFile(join(stateDir, 'jobs', `${other}.json`), '{"version":1,"job_id":');
    await writeFile(join(stateDir, 'jobs', `${jobId}.json.abc.tmp`), 'half');
    const warnings: string[] = [];
    const loaded = await new JobStore(stateDir, { warn: (_detail, message) => warnings.push(message) }).loadAll();
    expect(loaded.map((entry) => entry.job_id)).toEqual([jobId]);
    expect(warnings).toHaveLength(1);
    expect((await readdir(join(stateDir, 'jobs'))).sort()).toEqual([`${jobId}.json`, `${other}.json.corrupt`].sort());
    expect(JSON.parse(await readFile(store.recordPath(jobId), 'utf8')).phase).toBe('ready');
  });

  it('refuses paths that are not job ids', () => {
    const store = new JobStore(stateDir);
    expect(() => store.recordPath('../../etc/passwd')).toThrow();
    expect(() => store.hostKeyPath('x')).toThrow();
  });
});
