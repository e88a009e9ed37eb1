// The hardware receipts' per-machine counter (HardwareReceiptBody.receipt_seq), kept in the state directory like the
// channel's message ids: each number is written to disk before a receipt carries it, so no two receipts of this
// machine ever share one, across restarts and between `ark-agent selftest` and the daemon. The control plane refuses
// a receipt at or below the highest it stored (a replay).
import { open, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ensureStateDir, StateError, writeJsonAtomic } from '../state.js';

export const RECEIPT_SEQ_FILE = 'receipt-seq.json';
/** Held while a number is taken, so `ark-agent selftest` and the daemon never hand out the same one. */
export const RECEIPT_SEQ_LOCK = 'receipt-seq.lock';
const LOCK_WAIT_MS = 10_000;
/** A lock older than this was left by a process that died holding it (taking a number takes milliseconds). */
const LOCK_STALE_MS = 30_000;

/** Serialises the counter within this process (the daemon and its commands share one). */
const chains = new Map<string, Promise<unknown>>();

/** Takes the next receipt number, persisted before it is returned. */
export function nextReceiptSeq(stateDir: string): Promise<number> {
  const previous = chains.get(stateDir) ?? Promise.resolve();
  const next = previous
    .catch(() => undefined)
    .then(async () => {
      await ensureStateDir(stateDir);
      return withLock(join(stateDir, RECEIPT_SEQ_LOCK), async () => {
        const seq = (await readLastReceiptSeq(stateDir)) + 1;
        await writeJsonAtomic(join(stateDir, RECEIPT_SEQ_FILE), { version: 1, last: seq });
        return seq;
      });
    });
  chains.set(stateDir, next);
  return next;
}

/** The last number handed out; 0 before the first receipt. */
export async function readLastReceiptSeq(stateDir: string): Promise<number> {
  const path = join(stateDir, RECEIPT_SEQ_FILE);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw new StateError(`cannot read ${path}: ${(error as Error).message}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    value = undefined;
  }
  const last = (value as { last?: unknown } | undefined)?.last;
  // A damaged counter must not restart at 1: the control plane would refuse every receipt as a replay.
  if (typeof last !== 'number' || !Number.isSafeInteger(last) || last < 0) {
    throw new StateError(`${path} is damaged; restore it or remove it (receipts would restart at 1 and be refused as replays)`);
  }
  return last;
}

/** Runs `work` holding an exclusive lock file (created with O_EXCL), across processes. */
async function withLock<T>(path: string, work: () => Promise<T>): Promise<T> {
  // Wall time and Node's timers: this waits on another process's file, not on anything the agent's clock schedules.
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      const handle = await open(path, 'wx', 0o600);
      await handle.close();
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const held = await stat(path).catch(() => undefined);
      if (held !== undefined && Date.now() - held.mtimeMs > LOCK_STALE_MS) {
        await rm(path, { force: true });
        continue;
      }
      if (Date.now() > deadline) throw new StateError(`${path} is held by another process; remove it if no ark-agent is running`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
  try {
    return await work();
  } finally {
    await rm(path, { force: true });
  }
}
