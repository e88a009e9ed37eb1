// One job's captured output on disk (issue 25 item 2): `<stateDir>/logs/<job_id>/current.jsonl` and `previous.jsonl`,
// one JSON line per log line. When the current file passes half the job's bound it becomes the previous one (the
// older previous is dropped), so a job never holds more than its bound (plus one line) however much it writes, and
// the newest half of the bound is always kept whole. The lines are redacted before they get here (job-logs.ts).
import { appendFile, mkdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';

export type LogStreamName = 'stdout' | 'stderr' | 'ark';

/** One stored line: its sequence number in the job's log (the API's cursor), stream, Docker timestamp and text. */
export type StoredLogLine = { n: number; s: LogStreamName; t: string; l: string };

const CURRENT = 'current.jsonl';
const PREVIOUS = 'previous.jsonl';

export class JobLogFile {
  readonly #dir: string;
  readonly #maxBytes: number;
  #next = 1;
  #currentBytes = 0;
  #lastTimestamp: string | undefined;
  #writing: Promise<void> = Promise.resolve();

  private constructor(dir: string, maxBytes: number) {
    this.#dir = dir;
    this.#maxBytes = maxBytes;
  }

  /** Opens (or creates) the job's log, taking up the numbering and the last timestamp where a previous run left them. */
  static async open(dir: string, maxBytes: number): Promise<JobLogFile> {
    const file = new JobLogFile(dir, maxBytes);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const lines = await file.#readAll();
    const last = lines.at(-1);
    if (last !== undefined) {
      file.#next = last.n + 1;
      file.#lastTimestamp = lines.findLast((line) => line.s !== 'ark')?.t;
    }
    file.#currentBytes = await stat(join(dir, CURRENT)).then(
      (info) => info.size,
      () => 0,
    );
    return file;
  }

  /** The timestamp of the last line the container wrote that is kept here: a restarted capture resumes after it. */
  get lastTimestamp(): string | undefined {
    return this.#lastTimestamp;
  }

  /** The cursor of the last line (0: none yet). */
  get lastCursor(): number {
    return this.#next - 1;
  }

  /** Numbers the lines now and writes them in the background, in order; `flushed()` waits for the writes. */
  append(lines: ReadonlyArray<Omit<StoredLogLine, 'n'>>): StoredLogLine[] {
    const numbered = lines.map((line) => ({ n: this.#next++, ...line }));
    if (numbered.length === 0) return numbered;
    for (const line of numbered) if (line.s !== 'ark') this.#lastTimestamp = line.t;
    const text = numbered.map((line) => `${JSON.stringify(line)}\n`).join('');
    this.#writing = this.#writing
      .then(async () => {
        await appendFile(join(this.#dir, CURRENT), text, { mode: 0o600 });
        this.#currentBytes += Buffer.byteLength(text);
        if (this.#currentBytes >= this.#maxBytes / 2) {
          await rename(join(this.#dir, CURRENT), join(this.#dir, PREVIOUS));
          this.#currentBytes = 0;
        }
      })
      .catch(() => undefined);
    return numbered;
  }

  /** Resolves once every line appended so far is on disk (or its write failed). */
  flushed(): Promise<void> {
    return this.#writing;
  }

  /** Every line kept, oldest first. */
  async read(): Promise<StoredLogLine[]> {
    await this.flushed();
    return this.#readAll();
  }

  /** Removes the job's log directory (at clean). */
  async remove(): Promise<void> {
    await this.flushed();
    await rm(this.#dir, { recursive: true, force: true });
  }

  async #readAll(): Promise<StoredLogLine[]> {
    const lines: StoredLogLine[] = [];
    for (const name of [PREVIOUS, CURRENT]) {
      const text = await readFile(join(this.#dir, name), 'utf8').catch(() => '');
      for (const row of text.split('\n')) {
        if (row === '') continue;
        try {
          const line = JSON.parse(row) as StoredLogLine;
          // A torn last row (a crash mid-write) or anything out of order is skipped.
          if (typeof line.n === 'number' && (lines.length === 0 || line.n > (lines.at(-1) as StoredLogLine).n)) lines.push(line);
        } catch {
          // Not a whole row: a crash while it was being written.
        }
      }
    }
    return lines;
  }
}
