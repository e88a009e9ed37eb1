import { type FileHandle, open, readFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { isReliableAgentType, type ReliableAgentMessage } from '@ark/shared';
import { writeJsonAtomic } from '../state.js';

type Body<M> = M extends unknown ? Omit<M, 'v' | 'sid' | 'seq' | 'id'> : never;
/**
 * A reliable message as the agent queues it: the channel adds v, sid, seq and the per-machine id. Which types are
 * reliable is the catalog's word (shared/src/channel/catalog.ts), the same the control plane applies once.
 */
export type ReliableBody = Body<ReliableAgentMessage>;

export interface QueuedMessage {
  id: number;
  body: ReliableBody;
}

export const QUEUE_FILE = 'channel-queue.jsonl';
export const COMMANDS_FILE = 'channel-commands.json';

export class QueueFullError extends Error {
  override name = 'QueueFullError';
}

export interface PersistentQueueOptions {
  stateDir: string;
  /** Entries kept; beyond it the oldest telemetry batch is dropped first. Receipts are never dropped. */
  maxEntries?: number;
  /** fsync each append before it may be sent (true outside tests that measure something else). */
  durable?: boolean;
}

// Log lines: {"n": next id, "a": acked upto} (header after a rewrite), {"m": {id, body}}, {"a": upto} (an
// acknowledgement), {"x": id} (a telemetry batch dropped to respect the bound).
type LogLine = { n: number; a: number } | { m: QueuedMessage } | { a: number } | { x: number };

/**
 * The agent's resend queue: every reliable message is appended to a log and flushed to disk before it may be
 * sent, and leaves the queue when the control plane acknowledges it (cumulatively). Acknowledgements are appended
 * too; the log is rewritten (temporary file and rename) when it holds mostly dead lines. Message ids come from
 * the same log, so they never repeat across restarts.
 */
export class PersistentQueue {
  readonly #path: string;
  readonly #commandsPath: string;
  readonly #maxEntries: number;
  readonly #durable: boolean;
  #entries: QueuedMessage[] = [];
  #nextId = 1;
  #ackedUpto = 0;
  #commandsAppliedUpto = 0;
  #logLines = 0;
  #handle: FileHandle | null = null;
  /** Appends and rewrites run one at a time, in call order. */
  #chain: Promise<unknown> = Promise.resolve();
  #droppedTelemetry = 0;

  private constructor(options: PersistentQueueOptions) {
    this.#path = join(options.stateDir, QUEUE_FILE);
    this.#commandsPath = join(options.stateDir, COMMANDS_FILE);
    this.#maxEntries = options.maxEntries ?? 10_000;
    this.#durable = options.durable ?? true;
  }

  static async open(options: PersistentQueueOptions): Promise<PersistentQueue> {
    const queue = new PersistentQueue(options);
    await queue.#load();
    return queue;
  }

  /** Unacknowledged messages, oldest first. */
  get entries(): readonly QueuedMessage[] {
    return this.#entries;
  }
  get size(): number {
    return this.#entries.length;
  }
  get nextId(): number {
    return this.#nextId;
  }
  get ackedUpto(): number {
    return this.#ackedUpto;
  }
  get commandsAppliedUpto(): number {
    return this.#commandsAppliedUpto;
  }
  get droppedTelemetry(): number {
    return this.#droppedTelemetry;
  }

  /** Assigns the next id and resolves once the message is on disk. */
  append(body: ReliableBody): Promise<QueuedMessage> {
    // Only what the control plane acknowledges may be queued: anything else would be resent forever.
    if (!isReliableAgentType(body.t)) return Promise.reject(new Error(`not a reliable agent message type: ${String(body.t)}`));
    return this.#serial(async () => {
      const lines: LogLine[] = [];
      if (this.#entries.length >= this.#maxEntries) {
        const oldestTelemetry = this.#entries.findIndex((entry) => entry.body.t === 'telemetry');
        if (oldestTelemetry >= 0) {
          const [dropped] = this.#entries.splice(oldestTelemetry, 1);
          this.#droppedTelemetry += 1;
          if (dropped) lines.push({ x: dropped.id });
        } else if (body.t === 'telemetry' || this.#entries.length >= this.#maxEntries * 2) {
          // Receipts may overrun the bound (they are never dropped), but not without limit.
          throw new QueueFullError(`the channel queue holds ${this.#entries.length} unacknowledged messages`);
        }
      }
      const message: QueuedMessage = { id: this.#nextId, body };
      lines.push({ m: message });
      await this.#write(lines, true);
      this.#nextId += 1;
      this.#entries.push(message);
      return message;
    });
  }

  /** Drops everything up to `upto`; cheap (one unflushed log line), since losing it only causes a harmless resend. */
  acknowledge(upto: number): number {
    if (upto <= this.#ackedUpto) return 0;
    this.#ackedUpto = upto;
    let count = 0;
    while (count < this.#entries.length && (this.#entries[count] as QueuedMessage).id <= upto) count += 1;
    if (count > 0) this.#entries.splice(0, count);
    void this.#serial(async () => {
      await this.#write([{ a: upto }], false);
      if (this.#logLines > 2 * this.#entries.length + 1_000) await this.#rewrite();
    }).catch(() => {});
    return count;
  }

  /**
   * The control plane has applied ids we never issued: this state directory lost its log (restored from an old
   * backup, say). Renumbers what is queued after the control plane's mark, so nothing new is taken for a duplicate.
   */
  rebase(controlPlaneAckedUpto: number): Promise<boolean> {
    return this.#serial(async () => {
      if (controlPlaneAckedUpto < this.#nextId) return false;
      let id = controlPlaneAckedUpto + 1;
      this.#entries = this.#entries.map((entry) => ({ id: id++, body: entry.body }));
      this.#nextId = id;
      this.#ackedUpto = controlPlaneAckedUpto;
      await this.#rewrite();
      return true;
    });
  }

  /** Records the highest command applied, durably, before it is acknowledged. */
  async setCommandsApplied(upto: number): Promise<void> {
    if (upto <= this.#commandsAppliedUpto) return;
    this.#commandsAppliedUpto = upto;
    await writeJsonAtomic(this.#commandsPath, { commands_applied_upto: upto }, { durable: this.#durable });
  }

  async close(): Promise<void> {
    await this.#chain.catch(() => {});
    if (this.#logLines > 2 * this.#entries.length + 16) await this.#serial(() => this.#rewrite()).catch(() => {});
    await this.#handle?.close();
    this.#handle = null;
  }

  #serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.#chain.then(work, work);
    this.#chain = next.catch(() => {});
    return next;
  }

  async #write(lines: LogLine[], sync: boolean): Promise<void> {
    this.#handle ??= await open(this.#path, 'a', 0o600);
    await this.#handle.write(lines.map((line) => `${JSON.stringify(line)}\n`).join(''));
    if (sync && this.#durable) await this.#handle.datasync();
    this.#logLines += lines.length;
  }

  /** Replaces the log with a header and the live entries: a reader sees the old file or the new one. */
  async #rewrite(): Promise<void> {
    const temporary = `${this.#path}.tmp`;
    const lines: LogLine[] = [{ n: this.#nextId, a: this.#ackedUpto }, ...this.#entries.map((m) => ({ m }))];
    const handle = await open(temporary, 'w', 0o600);
    try {
      await handle.write(lines.map((line) => `${JSON.stringify(line)}\n`).join(''));
      if (this.#durable) await handle.sync();
    } finally {
      await handle.close();
    }
    await this.#handle?.close();
    this.#handle = null;
    await rename(temporary, this.#path);
    this.#logLines = lines.length;
  }

  async #load(): Promise<void> {
    const commands = await readJsonOrNull(this.#commandsPath);
    const applied = (commands as { commands_applied_upto?: unknown } | null)?.commands_applied_upto;
    if (typeof applied === 'number' && Number.isSafeInteger(applied) && applied >= 0) this.#commandsAppliedUpto = applied;

    let text = '';
    try {
      text = await readFile(this.#path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    const byId = new Map<number, QueuedMessage>();
    let count = 0;
    for (const raw of text.split('\n')) {
      if (!raw) continue;
      let line: Partial<{ n: number; a: number; m: QueuedMessage; x: number }>;
      try {
        line = JSON.parse(raw) as typeof line;
      } catch {
        // A torn last line (power loss mid-append): that message was never sent, as sending waits for the flush.
        continue;
      }
      count += 1;
      if (typeof line.n === 'number') this.#nextId = Math.max(this.#nextId, line.n);
      if (typeof line.a === 'number') this.#ackedUpto = Math.max(this.#ackedUpto, line.a);
      if (line.m && typeof line.m.id === 'number') {
        byId.set(line.m.id, line.m);
        this.#nextId = Math.max(this.#nextId, line.m.id + 1);
      }
      if (typeof line.x === 'number') byId.delete(line.x);
    }
    this.#nextId = Math.max(this.#nextId, this.#ackedUpto + 1);
    this.#entries = [...byId.values()].filter((m) => m.id > this.#ackedUpto).sort((x, y) => x.id - y.id);
    this.#logLines = count;
    await rm(`${this.#path}.tmp`, { force: true });
    // Start from a compact log, so a long history does not slow every later load.
    if (count > this.#entries.length + 1) await this.#rewrite();
  }
}

async function readJsonOrNull(path: string): Promise<unknown> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as unknown;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    // A damaged counter file: start from 0; the control plane's resume point still prevents re-delivery.
    return null;
  }
}
