// How the agents bench's server processes (agents-server.ts, raw-socket-server.ts) answer for their memory: on
// {type:'gc'} over IPC they collect garbage until their RSS settles and answer {type:'memory', ...memoryUsage()}.

/** Readings of a settling process's RSS this close together (bytes) count as settled. */
const SETTLED_RSS_BYTES = 512 * 1024;
/** Pause between readings while settling, and readings at most. */
const SETTLE_STEP_MS = 250;
const SETTLE_READINGS_MAX = 20;

/**
 * The process's memory once it has settled: collect garbage, wait, read, until two readings' RSS lie within
 * SETTLED_RSS_BYTES. A reading taken at once swung by tens of MB between identical runs (the allocator and V8 give
 * freed pages back a moment after a collection, or not), which at 10,000 sockets is kilobytes a socket either way:
 * the bare-socket baseline read -1.1 to +3.0 KB a socket across five identical runs.
 */
export async function settledMemory(): Promise<NodeJS.MemoryUsage> {
  const gc = (globalThis as { gc?: () => void }).gc;
  let last: NodeJS.MemoryUsage | null = null;
  for (let reading = 0; reading < SETTLE_READINGS_MAX; reading++) {
    gc?.();
    gc?.();
    await new Promise((resolve) => setTimeout(resolve, SETTLE_STEP_MS));
    const memory = process.memoryUsage();
    if (last && Math.abs(memory.rss - last.rss) <= SETTLED_RSS_BYTES) return memory;
    last = memory;
  }
  return last ?? process.memoryUsage();
}

/** Answers the bench's {type:'gc'} with the settled memory (settledMemory). */
export function answerMemoryRequests(): void {
  process.on('message', (message: { type?: string }) => {
    if (message?.type !== 'gc') return;
    void settledMemory().then((memory) => process.send?.({ type: 'memory', ...memory }));
  });
}
