// One JSON file per job under `<stateDir>/jobs/`, replaced atomically (write, fsync, rename, fsync
// the directory), so a crash leaves either the old record or the new one, never half of either.
import { randomBytes } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { JOB_RECORD_VERSION, type JobRecord } from './job-record.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** Records larger than this are refused on read: a launch command is far smaller. */
const RECORD_MAX_BYTES = 4 * 1024 * 1024;
/** Job files read at start; the agent runs a handful of jobs at once. */
export const JOB_RECORDS_MAX = 10_000;

export function isJobId(value: string): boolean {
  return UUID.test(value);
}

export type JobStoreLogger = { warn(detail: Record<string, unknown>, message: string): void };

export class JobStore {
  readonly directory: string;
  private readonly logger: JobStoreLogger | undefined;
  // Writes to one file are serialised so a later state never loses to an earlier one.
  private readonly writes = new Map<string, Promise<void>>();

  constructor(stateDir: string, logger?: JobStoreLogger) {
    this.directory = join(stateDir, 'jobs');
    this.logger = logger;
  }

  recordPath(jobId: string): string {
    if (!isJobId(jobId)) throw new Error(`not a job id: ${jobId.slice(0, 64)}`);
    return join(this.directory, `${jobId}.json`);
  }

  hostKeyPath(jobId: string): string {
    if (!isJobId(jobId)) throw new Error(`not a job id: ${jobId.slice(0, 64)}`);
    return join(this.directory, `${jobId}.host-key`);
  }

  /** Every readable record; unreadable files are set aside as `.corrupt` and logged. */
  async loadAll(): Promise<JobRecord[]> {
    await mkdir(this.directory, { recursive: true, mode: 0o700 });
    const entries = await readdir(this.directory);
    // Leftovers of a write interrupted by a crash; the record they were replacing is intact.
    for (const name of entries.filter((entry) => entry.endsWith('.tmp'))) await rm(join(this.directory, name), { force: true });
    const names = entries.filter((name) => name.endsWith('.json')).slice(0, JOB_RECORDS_MAX);
    const records: JobRecord[] = [];
    for (const name of names) {
      const path = join(this.directory, name);
      try {
        const text = await readFile(path, 'utf8');
        if (text.length > RECORD_MAX_BYTES) throw new Error('record too large');
        const record = JSON.parse(text) as JobRecord;
        if (record.version !== JOB_RECORD_VERSION || !isJobId(record.job_id) || `${record.job_id}.json` !== name) {
          throw new Error('not a job record of this version');
        }
        record.outbox ??= [];
        records.push(record);
      } catch (error) {
        this.logger?.warn({ file: name, error: String(error).slice(0, 300) }, 'unreadable job record set aside');
        await rename(path, `${path}.corrupt`).catch(() => undefined);
      }
    }
    return records;
  }

  save(record: JobRecord): Promise<void> {
    const path = this.recordPath(record.job_id);
    const text = `${JSON.stringify(record, null, 1)}\n`;
    const previous = this.writes.get(path) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(() => this.writeAtomically(path, text));
    this.writes.set(path, next);
    void next.finally(() => {
      if (this.writes.get(path) === next) this.writes.delete(path);
    });
    return next;
  }

  async remove(jobId: string): Promise<void> {
    await rm(this.recordPath(jobId), { force: true });
  }

  private async writeAtomically(path: string, text: string): Promise<void> {
    await mkdir(this.directory, { recursive: true, mode: 0o700 });
    const temporary = `${path}.${randomBytes(6).toString('hex')}.tmp`;
    // Records hold the job's environment and engine key: readable by the agent only.
    const handle = await open(temporary, 'w', 0o600);
    try {
      await handle.writeFile(text);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, path);
    const directory = await open(this.directory, 'r');
    try {
      await directory.sync();
    } finally {
      await directory.close();
    }
  }
}
