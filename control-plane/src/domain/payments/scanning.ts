// Block-range planning and finality health for a chain watcher. Pure.

/**
 * The next range to read after `cursor` (the last block fully read), at most `maxBlocks` long and never past
 * `head`; null when there is nothing new. Ranges are contiguous, so a cursor stored with each range's rows never
 * skips a block and never reads one twice (a reorg rewinds it on purpose).
 */
export function nextRange(cursor: bigint, head: bigint, maxBlocks: number): { from: bigint; to: bigint } | null {
  if (maxBlocks < 1) throw new RangeError('maxBlocks must be at least 1');
  if (head <= cursor) return null;
  const from = cursor + 1n;
  const last = cursor + BigInt(maxBlocks);
  return { from, to: last < head ? last : head };
}

/**
 * Where a new network's cursor starts: at its finalized block, so nothing older than the watcher's first run is
 * scanned (there were no deposit addresses on it before) and nothing after it is missed.
 */
export function initialCursor(finalizedNumber: bigint): bigint {
  return finalizedNumber;
}

/** Where to rewind after a reorg: below every block that may have changed, but never below what was final. */
export function rewindTo(cursor: bigint, finalizedNumber: bigint): bigint {
  return finalizedNumber < cursor ? finalizedNumber : cursor;
}

/**
 * Whether a network's finality has stalled: the finalized block number has not advanced for longer than
 * `thresholdMs` (a stalled finality means deposits wait, and perhaps that the node or the chain is in trouble).
 */
export function finalityStalled(lastAdvancedAtMs: number, nowMs: number, thresholdMs: number): boolean {
  return nowMs - lastAdvancedAtMs > thresholdMs;
}
