// Retrieval access: after a stop, for the job's retrieval window, its SSH port serves read-only SFTP
// over its /workspace: the volume's directory when the agent can read it, otherwise a copy taken out
// of the stopped container with Docker's archive API (bounded, kept until clean).
import { spawn } from 'node:child_process';
import { constants } from 'node:fs';
import { access, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { JobAccessListener } from './job-access.js';
import { type JobContext, type LiveJob, serial, TIMER_MAX_MS, VOLUME_MOUNT_PATH } from './job-context.js';
import { errorText } from './text.js';

const exists = (path: string, mode?: number) =>
  access(path, mode).then(
    () => true,
    () => false,
  );

export class JobRetrieval {
  constructor(
    private readonly context: JobContext,
    private readonly access: JobAccessListener,
  ) {}

  /** Where the job's files can be served from; undefined (logged) when nowhere. */
  async prepare(job: LiveJob): Promise<string | undefined> {
    try {
      return await this.root(job);
    } catch (error) {
      this.context.logger.warn({ job_id: job.record.job_id, error: errorText(error) }, 'job files cannot be served for retrieval');
      return undefined;
    }
  }

  /** Serves read-only SFTP over the job's files (at `root`) until the retrieval window ends. */
  async serve(job: LiveJob, root: string | undefined): Promise<void> {
    const { clock } = this.context;
    const record = job.record;
    const until = record.retrieval_until === undefined ? 0 : new Date(record.retrieval_until).getTime();
    const remainingMs = until - clock.now().getTime();
    if (root === undefined || remainingMs <= 0 || record.ssh_port === undefined || record.launch === undefined) {
      await this.access.close(job);
      return;
    }
    await this.access.ensure(job, { kind: 'retrieval', root });
    clock.clearTimeout(job.retrievalTimer);
    job.retrievalTimer = clock.setTimeout(
      () =>
        serial(this.context, job, async () => {
          if (job.record.phase !== 'stopped') return;
          if (new Date(job.record.retrieval_until ?? 0).getTime() > clock.now().getTime()) await this.serve(job, root);
          else await this.access.close(job);
        }),
      Math.min(remainingMs, TIMER_MAX_MS),
    );
  }

  /** Ends the window now (clean): the timer stops; the listener is the caller's to close. */
  cancel(job: LiveJob): void {
    this.context.clock.clearTimeout(job.retrievalTimer);
  }

  /** Removes the archive copy of a job's files, if one was taken. */
  async removeCopy(jobId: string): Promise<void> {
    await rm(this.directory(jobId), { recursive: true, force: true });
  }

  private async root(job: LiveJob): Promise<string | undefined> {
    const { runtime, settings } = this.context;
    const source = settings.retrievalSource;
    const record = job.record;
    if (source !== 'archive') {
      const mountpoint = await runtime.volumeMountpoint(record.volume_name);
      if (mountpoint !== undefined && (await exists(mountpoint, constants.R_OK | constants.X_OK))) return mountpoint;
      if (source === 'mountpoint') return undefined;
    }
    if (record.container_id === undefined) return undefined;
    return this.copyOut(job, record.container_id);
  }

  private directory(jobId: string): string {
    return join(this.context.settings.stateDir, 'retrieval', jobId);
  }

  /** Copies /workspace out of the stopped container (Docker's archive API) when the volume's directory cannot be read. */
  private async copyOut(job: LiveJob, containerId: string): Promise<string> {
    const directory = this.directory(job.record.job_id);
    const complete = join(directory, '.complete');
    const root = join(directory, 'workspace');
    if (await exists(complete)) return root;
    await rm(directory, { recursive: true, force: true });
    await mkdir(directory, { recursive: true, mode: 0o700 });
    const archive = await this.context.runtime.exportPath(containerId, VOLUME_MOUNT_PATH);
    await extractTar(archive, directory, this.context.settings.retrievalCopyMaxBytes);
    await writeFile(complete, '');
    return root;
  }
}

/** Extracts a tar stream into `directory` with the system tar, refusing archives larger than maxBytes. */
export function extractTar(archive: Readable, directory: string, maxBytes: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const tar = spawn('tar', ['-x', '-C', directory, '--no-same-owner', '--no-overwrite-dir'], { stdio: ['pipe', 'ignore', 'pipe'] });
    let bytes = 0;
    let stderr = '';
    let failed = false;
    const fail = (error: Error) => {
      if (failed) return;
      failed = true;
      archive.destroy();
      tar.kill('SIGKILL');
      reject(error);
    };
    tar.stderr.setEncoding('utf8');
    tar.stderr.on('data', (chunk: string) => {
      if (stderr.length < 2000) stderr += chunk;
    });
    archive.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > maxBytes) fail(new Error(`job files exceed ${maxBytes} bytes`));
    });
    archive.once('error', (error) => fail(error));
    tar.stdin.on('error', () => undefined);
    archive.pipe(tar.stdin);
    tar.once('error', (error) => fail(error));
    tar.once('close', (code) => {
      if (failed) return;
      if (code === 0) resolve();
      else fail(new Error(`tar exited with ${code}: ${stderr.trim().slice(0, 300)}`));
    });
  });
}
