import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { JobAccessListener } from './job-access.js';
import type { JobContext, LiveJob } from './job-context.js';
import { extractTar, JobRetrieval } from './job-retrieval.js';
import { at, createJobKit, type JobKit } from './testing/job-test-kit.js';

describe('JobRetrieval', () => {
  let kit: JobKit;
  let context: JobContext;
  let retrieval: JobRetrieval;
  const made: Array<{ kit: JobKit; context: JobContext }> = [];

  async function setUp(overrides: Parameters<typeof createJobKit>[0] = {}) {
    kit = await createJobKit(overrides);
    context = kit.context();
    made.push({ kit, context });
    retrieval = new JobRetrieval(context, new JobAccessListener(context));
  }

  /** A ready job, stopped now with a retrieval window of `windowS`. */
  async function stoppedJob(windowS: number): Promise<LiveJob> {
    const job = await kit.readyJob(context);
    await kit.runtime.stopContainer(job.record.container_id as string, 10);
    job.record.phase = 'stopped';
    job.record.stopped_at = kit.clock.now().toISOString();
    job.record.retrieval_until = new Date(kit.clock.now().getTime() + windowS * 1000).toISOString();
    return job;
  }

  afterEach(async () => {
    for (const { kit, context } of made.splice(0)) {
      context.lifecycle.closing = true;
      for (const job of context.jobs.values()) await job.ssh?.close();
      await kit.cleanup();
    }
  });

  it('serves the volume directory in place for the window, then closes the listener', async () => {
    await setUp({ volumes: true });
    const job = await stoppedJob(60);
    const root = await retrieval.prepare(job);
    expect(root).toBe(await kit.runtime.volumeMountpoint(job.record.volume_name));
    await retrieval.serve(job, root);
    expect(job.ssh).toBeDefined();
    expect(kit.runtime.callsOf('exportPath')).toEqual([]);
    await kit.clock.advance(59_999);
    expect(job.ssh).toBeDefined();
    await kit.clock.advance(1);
    expect(job.ssh).toBeUndefined();
  });

  it('copies /workspace out of the stopped container when the volume cannot be read, once, until removed', async () => {
    await setUp();
    const job = await stoppedJob(60);
    const root = await retrieval.prepare(job);
    expect(root).toBe(join(kit.stateDir, 'retrieval', job.record.job_id, 'workspace'));
    expect(await readFile(join(root as string, 'out', 'result.txt'), 'utf8')).toBe('result\n');
    expect((await stat(join(kit.stateDir, 'retrieval', job.record.job_id))).mode & 0o777).toBe(0o700);
    expect(await retrieval.prepare(job)).toBe(root);
    expect(kit.runtime.callsOf('exportPath')).toEqual([[job.record.container_id, '/workspace']]);
    await retrieval.removeCopy(job.record.job_id);
    await expect(stat(root as string)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('serves nothing when the files cannot be had: mountpoint only, a copy over its bound, or an ended window', async () => {
    await setUp({ retrievalSource: 'mountpoint' });
    const job = await stoppedJob(60);
    expect(await retrieval.prepare(job)).toBeUndefined();
    await setUp({ retrievalCopyMaxBytes: 100 });
    const bounded = await stoppedJob(60);
    expect(await retrieval.prepare(bounded)).toBeUndefined();
    const ended = await stoppedJob(0);
    await retrieval.serve(ended, kit.stateDir);
    expect(ended.ssh).toBeUndefined();
    expect(kit.clock.pendingTimers).toBe(0);
    expect(ended.record.retrieval_until).toBe(at(0));
  });

  it('refuses an archive beyond its bound and reports what tar says of a broken one', async () => {
    await setUp();
    await expect(extractTar(Readable.from([Buffer.alloc(2048)]), kit.stateDir, 100)).rejects.toThrow('job files exceed 100 bytes');
    await expect(extractTar(Readable.from([Buffer.from('not a tar archive at all'.repeat(40))]), kit.stateDir, 10_000)).rejects.toThrow(
      /^tar exited with 2/,
    );
  });
});
