// The hardware receipts' per-machine counter (HardwareReceiptBody.receipt_seq), kept in the state directory like the
// channel's message ids: each number is written to disk before a receipt carries it, so no two receipts of this
// machine ever share one, across restarts and between `ark-agent selftest` and the daemon. The control plane refuses
// a receipt at or below the highest it stored (a replay).
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ensureStateDir, StateError, writeJsonAtomic } from '../state.js';

export const RECEIPT_SEQ_FILE = 'receipt-seq.json';

/** Serialises the counter within this process (the daemon and its commands share one). */
const chains = new Map<string, Promise<unknown>>();

/** Takes the next receipt number, persisted before it is returned. */
export function nextReceiptSeq(stateDir: string): Promise<number> {
  const previous = chains.get(stateDir) ?? Promise.resolve();
  const next = previous
    .catch(() => undefined)
    .then(async () => {
      const seq = (await readLastReceiptSeq(stateDir)) + 1;
      await ensureStateDir(stateDir);
      await writeJsonAtomic(join(stateDir, RECEIPT_SEQ_FILE), { version: 1, last: seq });
      return seq;
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
